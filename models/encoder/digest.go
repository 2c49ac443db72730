package encoder

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/graphloom/graphloom/models/lm"
)

// digestSamples is how many 4 KiB pieces of each weights file the digest reads
// besides its header: enough to tell two checkpoints of one shape apart without
// reading gigabytes.
const digestSamples = 32

// folderDigest hashes what decides the vectors: config.json, tokenizer.json, the
// weights (each safetensors file's size, header — names, dtypes, shapes, offsets —
// and digestSamples pieces spread over its data; the shard index when there is one)
// and the pipeline.
func folderDigest(dir string, p Pipeline) (string, error) {
	h := sha256.New()
	add := func(label string, data []byte) {
		fmt.Fprintf(h, "%s %d\n", label, len(data))
		h.Write(data)
	}
	for _, name := range []string{"config.json", "tokenizer.json", lm.IndexFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !os.IsNotExist(err) {
			return "", fmt.Errorf("encoder: digest: %w", err)
		}
		add(name, data)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	for _, f := range files {
		if err := sampleFile(h, f, false); err != nil {
			return "", fmt.Errorf("encoder: digest of %s: %w", f, err)
		}
	}
	if bin := filepath.Join(dir, torchWeights); len(files) == 0 && exists(bin) { // what openWeights reads then
		if err := sampleFile(h, bin, true); err != nil {
			return "", fmt.Errorf("encoder: digest of %s: %w", bin, err)
		}
	}
	pj, err := json.Marshal(struct {
		Pooling       []string
		IncludePrompt bool
		Normalize     bool
		QueryPrompt   string
		PassagePrompt string
		MaxLength     int
		Lowercase     bool
	}{p.Pooling, p.IncludePrompt, p.Normalize, p.QueryPrompt, p.PassagePrompt, p.MaxLength, p.Lowercase})
	if err != nil {
		return "", err
	}
	add("pipeline", pj)
	if p.QueryTask != "" || p.PassageTask != "" { // hashed only where there are adapters: other folders keep their identities
		add("tasks", []byte(p.QueryTask+"\x00"+p.PassageTask))
	}
	// Dense modules, where the folder has some (a folder without any hashes as it did
	// before they were read): each one's config and weights.
	for i, d := range p.Dense {
		data, err := os.ReadFile(filepath.Join(d.Dir, "config.json"))
		if err != nil {
			return "", fmt.Errorf("encoder: digest: %w", err)
		}
		add(fmt.Sprintf("dense %d", i), data)
		if err := sampleFile(h, d.Weights, filepath.Base(d.Weights) == torchWeights); err != nil {
			return "", fmt.Errorf("encoder: digest of %s: %w", d.Dir, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sampleFile hashes a file's name and size, then, for a safetensors file, its header
// and digestSamples pieces spread over its data; for another (raw: a torch.save
// archive, its pickle and storages), digestSamples pieces spread over the whole file.
func sampleFile(w io.Writer, path string, raw bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	fmt.Fprintf(w, "file %s %d\n", filepath.Base(path), size)
	data := int64(0)
	if !raw {
		var n [8]byte
		if _, err := io.ReadFull(f, n[:]); err != nil {
			return fmt.Errorf("not a safetensors file: %w", err)
		}
		hdr := int64(binary.LittleEndian.Uint64(n[:]))
		if hdr < 0 || 8+hdr > size {
			return fmt.Errorf("not a safetensors file: header length %d exceeds the file (%d bytes)", hdr, size)
		}
		if _, err := io.Copy(w, io.NewSectionReader(f, 8, hdr)); err != nil {
			return err
		}
		data = 8 + hdr
	}
	span := size - data
	const piece = 4096
	for i := range int64(digestSamples) {
		off := data + span*i/digestSamples
		if _, err := io.Copy(w, io.NewSectionReader(f, off, min(piece, size-off))); err != nil {
			return err
		}
	}
	return nil
}
