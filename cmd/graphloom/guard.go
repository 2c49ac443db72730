package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/graphio"
)

// outKind is what a command writes at its output path.
type outKind int

const (
	// outIndex is a graphloom index: an existing file is replaced only if it is one.
	outIndex outKind = iota
	// outFile is any other file: an existing one is replaced only if recognised as
	// this command's own output (outSpec.is), or with --force.
	outFile
	// outDir is a directory the command writes its files into.
	outDir
)

// outSpec is one output of a command, for guardOutput.
type outSpec struct {
	name string // how the command line names it: "--out", "DST"
	path string
	kind outKind
	// what names the file in messages ("index file", "run file").
	what string
	// is recognises a file of the kind this command writes (nil: none is recognised).
	is func(path string) bool
	// force replaces an existing file that is not recognised (--force).
	force bool
	// inPlace names the input the command rewrites in place under its writer lock
	// ("--index" for augment): being the same file as it is the point, not a collision.
	inPlace string
	// files, for an outDir, names the files the command may write in it: an input
	// that is one of them would be replaced.
	files []string
	// ours, for an outDir, says whether an existing directory that holds files is
	// the command's own, untouched since it wrote it (nil), or not (why): another
	// tool's (LightRAG's working directory, a GraphRAG output) is written into only
	// with --force. nil ours: any directory is.
	ours func(dir string) error
}

// inSpec is one input of a command: how the command line names it, and its path.
type inSpec struct{ name, path string }

// guardOutput refuses, before any work, an output that would destroy an input or
// something the command did not write: the same file as an input of another role
// (compared by device and inode, so ./x, absolute paths, symbolic and hard links are
// caught), a path inside an input directory, an existing directory where a file is
// written (or a file where a directory is), or an existing file that is not what the
// command writes (unless --force). The error is a usage error naming both paths.
func guardOutput(cmd *cobra.Command, o outSpec, ins ...inSpec) error {
	if o.path == "" {
		return nil
	}
	refuse := func(format string, args ...any) error {
		return usageError{fmt.Errorf("%s: %s", cmd.Name(), fmt.Sprintf(format, args...))}
	}
	st, err := os.Stat(o.path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return refuse("%s %s: %v", o.name, o.path, err)
	}
	for _, in := range ins {
		if in.path == "" {
			continue
		}
		ist, err := os.Stat(in.path)
		if err != nil {
			continue // the command reports a missing input itself
		}
		if exists && os.SameFile(st, ist) {
			if in.name == o.inPlace {
				continue
			}
			return refuse("%s %s is the same file as %s %s: writing it would destroy the input; choose another %s (nothing was written)",
				o.name, o.path, in.name, in.path, o.name)
		}
		if ist.IsDir() && within(o.path, ist) {
			return refuse("%s %s lies inside %s %s: writing there would change the input; choose a path outside it (nothing was written)",
				o.name, o.path, in.name, in.path)
		}
		if exists && o.kind == outDir {
			for _, f := range o.files {
				if fst, err := os.Stat(filepath.Join(o.path, f)); err == nil && os.SameFile(fst, ist) {
					return refuse("%s %s: writing %s there would destroy %s %s; choose another %s (nothing was written)",
						o.name, o.path, f, in.name, in.path, o.name)
				}
			}
		}
	}
	if !exists {
		return nil
	}
	switch {
	case o.kind == outDir:
		if !st.IsDir() {
			return refuse("%s %s exists and is not a directory (this command writes a directory of files there)", o.name, o.path)
		}
		if o.ours == nil || o.force {
			break
		}
		entries, err := os.ReadDir(o.path)
		if err != nil {
			return refuse("%s %s: %v", o.name, o.path, err)
		}
		if len(entries) == 0 {
			break
		}
		if err := o.ours(o.path); err != nil {
			return refuse("%s %s %v: this command would replace files of the same names; choose a new directory, or pass --force to write into it",
				o.name, o.path, err)
		}
	case st.IsDir():
		return refuse("%s %s is an existing directory: give the path of the %s to write", o.name, o.path, o.what)
	case o.force:
	case o.kind == outIndex:
		ok, err := graphio.IsIndexFile(o.path)
		if err != nil {
			return refuse("%s %s: %v", o.name, o.path, err)
		}
		if !ok {
			return refuse("%s %s exists and is not a graphloom index: not replacing it; choose another path, or pass --force to replace it", o.name, o.path)
		}
	case o.is == nil || !o.is(o.path):
		return refuse("%s %s exists and is not a %s this command wrote: not replacing it; choose another path, or pass --force to replace it", o.name, o.path, o.what)
	}
	return nil
}

// within reports whether path (existing or not) lies inside the directory dir, by
// comparing dir with each existing ancestor of path.
func within(path string, dir os.FileInfo) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for p := filepath.Dir(abs); ; {
		if st, err := os.Stat(p); err == nil && os.SameFile(st, dir) {
			return true
		}
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		p = parent
	}
}

// addForce registers --force, which lets a command replace an existing output file it
// does not recognise as its own.
func addForce(cmd *cobra.Command, force *bool) {
	cmd.Flags().BoolVar(force, "force", false, "replace an existing output file even if it is not one this command writes (never an input)")
}

// jsonlWithKeys returns a recogniser of JSONL files whose first line is an object
// with all of keys (a run file, synthetic items), or that are empty: such a command
// writes an empty file when it has no records, and replacing one loses nothing.
func jsonlWithKeys(keys ...string) func(path string) bool {
	return func(path string) bool {
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		line, err := bufio.NewReaderSize(io.LimitReader(f, 1<<22), 1<<22).ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return false
		}
		if errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) == 0 {
			return true // empty (or blank) file
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(bytes.TrimSpace(line), &obj) != nil {
			return false
		}
		for _, k := range keys {
			if _, ok := obj[k]; !ok {
				return false
			}
		}
		return true
	}
}

// isGraphML recognises a GraphML file graphloom exported by its first bytes: a
// <graphml> root declaring the "graphloom" graph attribute among its keys (a GraphML
// file of another tool — LightRAG's graph store, a hand-edited Gephi file — is not
// replaced without --force).
func isGraphML(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 8192)
	n, _ := io.ReadFull(f, head)
	return bytes.Contains(head[:n], []byte("<graphml")) && bytes.Contains(head[:n], []byte(`for="graph" attr.name="graphloom"`))
}
