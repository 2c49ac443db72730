package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/graphio/interop"
	"github.com/graphloom/graphloom/kg"
)

// importFormats returns the importers by format name.
func importFormats() map[string]func(src string) (*graphio.Index, *interop.Report, error) {
	return map[string]func(string) (*graphio.Index, *interop.Report, error){
		"lightrag": interop.ImportLightRAG,
		"hipporag": interop.ImportHippoRAG,
		"gfmrag":   interop.ImportGFMRAG,
		"graphrag": interop.ImportGraphRAG,
	}
}

// exportFormats returns the exporters by format name.
func exportFormats() map[string]func(ix *graphio.Index, dst string) (*interop.Report, error) {
	return map[string]func(*graphio.Index, string) (*interop.Report, error){
		"lightrag": interop.ExportLightRAG,
		"hipporag": interop.ExportHippoRAG,
		"gfmrag":   interop.ExportGFMRAG,
		"graphrag": interop.ExportGraphRAG,
		"graphml":  interop.ExportGraphML,
	}
}

func formatNames[V any](m map[string]V) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

func checkFormat[V any](verb, name string, m map[string]V) error {
	if _, ok := m[name]; ok {
		return nil
	}
	return usageError{fmt.Errorf("%s: unknown format %q (want %s)", verb, name, formatNames(m))}
}

func newImportCmd() *cobra.Command {
	kcfg := kg.DefaultConfig()
	var from, out, embedder string
	var asJSON, wait, force bool
	var lf llmFlags
	cmd := &cobra.Command{
		Use:   "import --from FORMAT SRC --out INDEX",
		Short: "Import another framework's index (LightRAG, HippoRAG 2, GFM-RAG, GraphRAG) into a graphloom index",
		Long: `Import the on-disk index of another GraphRAG framework. Entities, relations, chunks and
documents become graphloom's graph; every field graphloom does not model is kept in the index, so
"graphloom export" to the same format writes it back unchanged. The imported vectors were made by a
model the format does not name, so graphloom embeds the index itself (--embedder, default the built-in
hashed embedder) and adds synonym edges; the original vectors are kept for export.

Formats: ` + formatNames(importFormats()) + ` (a LightRAG v1.4 working directory; a HippoRAG 2 save_dir
with its OpenIE results and, in a working directory under it, the parquet embedding stores; a GFM-RAG
dataset directory data/<name> with processed/stage1 in the v2 CSV or the v1 kg.txt layout; a Microsoft
GraphRAG v2/v3 output directory of parquet tables).`,
		Example: `  graphloom import --from lightrag ./rag_storage --out mine.gl
  graphloom augment --index mine.gl --completer extractive
  graphloom export --to lightrag mine.gl ./rag_storage_augmented`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "from", "out"); err != nil {
				return err
			}
			if err := checkFormat("import", from, importFormats()); err != nil {
				return err
			}
			src := args[0]
			if err := guardOutput(cmd, outSpec{name: "--out", path: out, kind: outIndex, what: "index file", force: force}, inSpec{"SRC", src}); err != nil {
				return err
			}
			if st, err := os.Stat(src); err != nil {
				return fmt.Errorf("import: %w", err)
			} else if !st.IsDir() {
				return fmt.Errorf("import: %s is not a directory (a %s index is a working directory)", src, from)
			}
			unlock, err := lockIndex(cmd, out, wait)
			if err != nil {
				return err
			}
			defer unlock()
			secs := map[string]any{}
			t0 := time.Now()
			stage := func(name string) { secs[name] = math.Round(time.Since(t0).Seconds()*1000) / 1000; t0 = time.Now() }
			ix, rep, err := importFormats()[from](src)
			if err != nil {
				return err
			}
			stage("read")
			ix.Meta.Graphloom = buildVersion()
			emb, err := lf.embedder(cmd.Context(), embedder)
			if err != nil {
				return err
			}
			progress, finish := bar(cmd, "embedding") // then synonym edges
			syn, err := kg.EmbedGraph(cmd.Context(), ix, emb, kcfg, progress)
			finish()
			if err != nil {
				return err
			}
			stage("embed")
			rep.Counts["synonym edges added"] = syn
			rep.Notices = append(rep.Notices, fmt.Sprintf("embedded with graphloom's %s for queries and augmentation (%s vectors cannot embed questions)", ix.Meta.Embedder, from))
			if err := graphio.WriteFile(out, ix); err != nil {
				return err
			}
			stage("write")
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"index": out, "report": rep, "stage_seconds": secs})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %s → %s\n%s\ntime: %s\n", src, out, rep, formatStages(secs, []string{"read", "embed", "write"}))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "format of SRC: "+formatNames(importFormats()))
	f.StringVar(&out, "out", "", "index file to write")
	f.StringVar(&embedder, "embedder", "hash", "embedder for graphloom's vectors: hash (built-in, offline), api (the configured embedding model) or local:DIR (a BERT-family model folder run in GoMLX)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&wait, "wait", false, "if another graphloom process is writing --out, wait for it instead of failing")
	addForce(cmd, &force)
	f.Float32Var(&kcfg.SynonymThreshold, "synonym-threshold", kcfg.SynonymThreshold, "least entity cosine for a synonym edge")
	limitFlag(cmd, "synonym-threshold", flagRange{lo: 0, hi: 1, loOpen: true})
	lf.register(cmd)
	return cmd
}

func newExportCmd() *cobra.Command {
	var to string
	var asJSON, force bool
	cmd := &cobra.Command{
		Use:   "export --to FORMAT INDEX DST",
		Short: "Export a graphloom index to another framework's layout or GraphML",
		Long: `Write a graphloom index in another framework's on-disk layout (DST is a directory) or as
GraphML for Gephi, NetworkX and Neo4j APOC (DST is a file). Records imported from that format are
written back unchanged; facts an augmentation run added carry their provenance (cited chunk ids, run
id, "augmented") in the format's own fields. What the format cannot hold is counted in the report.

A directory DST must be new, empty, or one export wrote that no other tool has changed since (it
leaves ` + exportMarker + ` there, listing its files): another tool's directory, such as the
LightRAG working directory an index was imported from, is written into only with --force.

Formats: ` + formatNames(exportFormats()) + `.`,
		Example: `  graphloom export --to graphml harbour.gl harbour.graphml
  graphloom export --to lightrag mine.gl ./rag_storage_augmented`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "to"); err != nil {
				return err
			}
			if err := checkFormat("export", to, exportFormats()); err != nil {
				return err
			}
			dst := args[1]
			o := outSpec{name: "DST", path: dst, kind: outDir, what: "directory", force: force, ours: exportedUntouched}
			if to == "graphml" {
				if st, err := os.Stat(dst); err == nil && st.IsDir() {
					dst = filepath.Join(dst, strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))+".graphml")
				}
				o = outSpec{name: "DST", path: dst, kind: outFile, what: "GraphML file", force: force, is: isGraphML}
			}
			if err := guardOutput(cmd, o, inSpec{"INDEX", args[0]}); err != nil {
				return err
			}
			ix, err := graphio.ReadFile(args[0])
			if err != nil {
				return err
			}
			if o.kind == outDir {
				if err := startExport(dst, to, args[0]); err != nil {
					return err
				}
			}
			rep, err := exportFormats()[to](ix, dst)
			if err != nil {
				return err
			}
			if o.kind == outDir {
				if err := writeExportMarker(dst, to, args[0], false); err != nil { // the export itself is written
					cmd.PrintErrf("warning: %v: exporting into %s again will need --force\n", err, dst)
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"out": dst, "report": rep})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported %s → %s\n%s\n", args[0], dst, rep)
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "target format: "+formatNames(exportFormats()))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	addForce(cmd, &force)
	return cmd
}

// exportMarker is the file export leaves in a directory it wrote: the files it wrote
// there, with their sizes and modification times, so that exporting there again
// replaces them without --force while nothing else has written there since.
const exportMarker = ".graphloom-export.json"

// exportRecord is the content of exportMarker.
type exportRecord struct {
	WrittenBy string                `json:"written_by"`
	Format    string                `json:"format"`
	Index     string                `json:"index"`
	Time      string                `json:"time"`
	Files     map[string]exportFile `json:"files"` // by slash-separated path under the directory
	// InProgress marks an export under way: one killed before it finished left
	// files the list does not describe, its own.
	InProgress bool `json:"in_progress,omitempty"`
}

type exportFile struct {
	Size    int64 `json:"size"`
	ModTime int64 `json:"mtime_ns"`
}

// dirFiles lists the regular files under dir (the marker left out) by slash path.
func dirFiles(dir string) (map[string]exportFile, error) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // WalkDir does not enter a root that is a link
	}
	files := map[string]exportFile{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == exportMarker {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = exportFile{Size: info.Size(), ModTime: info.ModTime().UnixNano()}
		return nil
	})
	return files, err
}

// exportedUntouched reports (nil) that dir is a directory export wrote and nothing
// has changed or added a file there since; otherwise what is not.
func exportedUntouched(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, exportMarker))
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("holds files graphloom did not write")
	}
	var rec exportRecord
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		return fmt.Errorf("has an unreadable %s (%v)", exportMarker, err)
	}
	if rec.Files == nil || rec.InProgress {
		return nil // an older marker, which lists no files, or an export of ours cut short
	}
	now, err := dirFiles(dir)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(now)) {
		if was, ok := rec.Files[name]; !ok {
			return fmt.Errorf("holds %s, which graphloom's export did not write there", name)
		} else if was != now[name] {
			return fmt.Errorf("holds %s, changed since graphloom exported there (another tool wrote it)", name)
		}
	}
	return nil
}

// startExport makes dir if need be and marks it as an export of ours in progress
// before the exporter writes a file, so that an export killed part-way, even into a
// directory it made, is rerun without --force.
func startExport(dir, format, index string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return writeExportMarker(dir, format, index, true)
}

// writeExportMarker records in dir which export wrote it, and its files; inProgress
// marks one about to write (so that a killed one is recognised as ours).
func writeExportMarker(dir, format, index string, inProgress bool) error {
	if abs, err := filepath.Abs(index); err == nil {
		index = abs
	}
	files, err := dirFiles(dir)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(exportRecord{WrittenBy: "graphloom export", Format: format, Index: index,
		Time: time.Now().UTC().Format(time.RFC3339), Files: files, InProgress: inProgress}, "", "  ")
	if err != nil {
		return err
	}
	return graphio.AtomicWrite(filepath.Join(dir, exportMarker), func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
}
