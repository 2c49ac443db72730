package graphio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

// Magic starts every index file.
const Magic = "GLOOMIDX"

const (
	codecRaw  = 0
	codecZstd = 1

	endSection = "end"

	maxSectionName = 255
	// maxSection bounds a section's declared size; larger claims are corruption.
	maxSection = 1 << 40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors the reader wraps, so callers can tell problems apart with errors.Is.
var (
	ErrNotIndex  = errors.New("not a graphloom index (wrong magic)")
	ErrVersion   = errors.New("unsupported index format version")
	ErrChecksum  = errors.New("checksum mismatch (file corrupt)")
	ErrTruncated = errors.New("truncated")
	ErrCorrupt   = errors.New("corrupt index")
	errTrailing  = errors.New("trailing bytes after the end section")
)

// Write encodes ix in format v3 (FormatVersion) to w. The output is a pure function of
// ix: writing the same index twice gives the same bytes. Every section is stored
// uncompressed (see the package documentation), embedding matrices aligned to their
// file offsets (see rawPrefix).
func Write(w io.Writer, ix *Index) error {
	if err := ix.Validate(); err != nil {
		return fmt.Errorf("graphio: write: %w", err)
	}
	if len(ix.skipped) > 0 {
		return fmt.Errorf("graphio: write: the index was read without its %v embeddings (ReadOptions); read it whole to write it", ix.skipped)
	}
	return writeSections(w, ix, FormatVersion, append(append([]section{}, sections...), optionalSections(ix)...), nil)
}

// writeSections writes the header stamped version and the sections all of ix, then
// the end section. Each section's payload is stored as it is, or as compress returns
// it (the test's writer of format v2 files compresses).
func writeSections(w io.Writer, ix *Index, version uint32, all []section, compress func(raw []byte) (byte, [][]byte)) error {
	head := make([]byte, 0, 12)
	head = append(head, Magic...)
	head = binary.LittleEndian.AppendUint32(head, version)
	if _, err := w.Write(head); err != nil {
		return fmt.Errorf("graphio: write header: %w", err)
	}
	off := int64(len(head)) // file offset of the next section
	// One buffer serves every section in turn: a large index's sections are hundreds
	// of megabytes, and fresh buffers per section were garbage that drove the heap to
	// twice the index while it was written.
	var raw []byte
	for _, s := range all {
		payloadOff := off + sectionHeader(s.name)
		var codec byte = codecRaw
		var payload [][]byte
		var rawLen uint64
		if s.pieces != nil { // a matrix: streamed from its own arrays
			payload = s.pieces(ix, payloadOff)
			for _, p := range payload {
				rawLen += uint64(len(p))
			}
		} else {
			e := enc{b: raw[:0], off: payloadOff}
			if err := s.encode(ix, &e); err != nil {
				return fmt.Errorf("graphio: encode section %q: %w", s.name, err)
			}
			raw = e.b
			payload, rawLen = [][]byte{raw}, uint64(len(raw))
			if compress != nil {
				codec, payload = compress(raw)
			}
		}
		n, err := writeSection(w, s.name, codec, payload, rawLen)
		if err != nil {
			return err
		}
		off += n
	}
	var e enc
	e.uvarint(uint64(len(all)))
	_, err := writeSection(w, endSection, codecRaw, [][]byte{e.b}, uint64(len(e.b)))
	return err
}

// Section header: name length (1 byte), name, codec (1 byte), raw length (8),
// stored length (8), CRC32C (4) of everything before it in the header and the payload.
func writeSection(w io.Writer, name string, codec byte, payload [][]byte, rawLen uint64) (int64, error) {
	if len(name) > maxSectionName {
		// Its length byte would wrap, and the file would not read back.
		return 0, fmt.Errorf("graphio: write section %.40q…: name of %d bytes, at most %d", name, len(name), maxSectionName)
	}
	stored := 0
	for _, p := range payload {
		stored += len(p)
	}
	h := make([]byte, 0, sectionHeader(name))
	h = append(h, byte(len(name)))
	h = append(h, name...)
	h = append(h, codec)
	h = binary.LittleEndian.AppendUint64(h, rawLen)
	h = binary.LittleEndian.AppendUint64(h, uint64(stored))
	crc := crc32.Checksum(h, castagnoli)
	for _, p := range payload {
		crc = crc32.Update(crc, castagnoli, p)
	}
	h = binary.LittleEndian.AppendUint32(h, crc)
	if _, err := w.Write(h); err != nil {
		return 0, fmt.Errorf("graphio: write section %q: %w", name, err)
	}
	for _, p := range payload {
		if _, err := w.Write(p); err != nil {
			return 0, fmt.Errorf("graphio: write section %q: %w", name, err)
		}
	}
	return int64(len(h) + stored), nil
}

// sectionHeader is the size of the header of a section named name.
func sectionHeader(name string) int64 { return int64(1 + len(name) + 1 + 8 + 8 + 4) }

// WriteFile writes ix to path atomically (see AtomicWrite), so a crash leaves either
// the old or the new index.
func WriteFile(path string, ix *Index) error {
	return AtomicWrite(path, func(w io.Writer) error { return Write(w, ix) })
}

// IsIndexFile reports whether the file at path starts with the index magic, so that a
// writer replaces only what it wrote (a graphloom index) and never, say, the corpus.
func IsIndexFile(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("graphio: %w", err)
	}
	defer f.Close()
	head := make([]byte, len(Magic))
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return false, fmt.Errorf("graphio: %s: %w", path, err)
	}
	return n == len(Magic) && string(head) == Magic, nil
}

// AtomicWrite writes a file through fn: to a temporary file in the same directory,
// buffered, fsynced, then renamed over path. If fn or any step fails, path is left as
// it was and the temporary file is removed. A file replaced keeps its permissions; a
// new one gets 0666 less the umask, as os.Create gives. A path that is a symbolic link
// is written through: the file it points to is replaced and the link stays.
func AtomicWrite(path string, fn func(w io.Writer) error) (err error) {
	path = ResolveLink(path)
	dir := filepath.Dir(path)
	f, err := createTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("graphio: %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if st, serr := os.Stat(path); serr == nil {
		if err = f.Chmod(st.Mode().Perm()); err != nil {
			return fmt.Errorf("graphio: %s: %w", path, err)
		}
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = fn(bw); err != nil {
		return fmt.Errorf("graphio: %s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("graphio: %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("graphio: %s: fsync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("graphio: %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("graphio: %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // make the rename durable; not all filesystems support it
		d.Close()
	}
	return nil
}

// createTemp creates a new file in dir named prefix and a random suffix, as
// os.CreateTemp does but with mode 0666 before the umask (os.CreateTemp's 0600 would
// make every file AtomicWrite creates private, whatever the umask says).
func createTemp(dir, prefix string) (*os.File, error) {
	for range 10000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("cannot create a temporary file %s* in %s", prefix, dir)
}

// ResolveLink returns the file a symbolic link at path points to (through every
// link, as the kernel resolves it, to a file that need not exist yet), or path itself
// when it is no link or the links loop. Writers lock and replace the resolved file,
// so that two names of one index share a lock and an index behind a link is updated,
// not replaced by a file.
func ResolveLink(path string) string {
	if st, err := os.Lstat(path); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return path
	}
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	// A dangling link: follow it by hand, each relative target from its link's
	// directory as the filesystem resolves it (through that directory's own links).
	p := path
	for range 40 { // as the kernel's limit on links followed
		st, err := os.Lstat(p)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return p
		}
		target, err := os.Readlink(p)
		if err != nil {
			return path
		}
		if !filepath.IsAbs(target) {
			dir := filepath.Dir(p)
			if d, err := filepath.EvalSymlinks(dir); err == nil {
				dir = d
			}
			target = filepath.Join(dir, target)
		}
		p = target
	}
	return path
}

// ReadFile reads the index at path. Errors name the file and the problem.
func ReadFile(path string) (*Index, error) { return ReadFileWith(path, ReadOptions{}) }

// ReadOptions select what a reader decodes.
type ReadOptions struct {
	// Embeddings, when set, names the node kinds whose embedding matrices are
	// decoded; the other kinds' sections are checksummed (unless mapped) but not
	// kept. The index records them (SkippedEmbeddings) and Write refuses it, so an
	// index read in part never replaces a whole one. A query that reads two of the
	// four matrices loads in about half the time and memory.
	Embeddings func(NodeKind) bool
	// Map, for ReadFileWith, maps the file into memory instead of reading it. The
	// records' strings and the embedding matrices of a format-v3 file are then the
	// mapped bytes themselves, so a process pays for page-cache pages only, neither a
	// copy nor fresh memory: a cold one-off ppr query on the 2Wiki index faults
	// 10K pages instead of 26K. Sections are checksummed by the workers that decode
	// them; sections left out (Embeddings) are neither touched nor checksummed. The
	// mapping is private (writes to the index in memory never reach the file) and is
	// never unmapped: it is meant for a process that reads one index and exits, like
	// a one-off query, not for a server that reloads. The file must not be truncated
	// in place while mapped (graphloom's writers replace files by renaming, which is
	// safe). Where mapping is not supported, the file is read as without Map.
	Map bool
	// Release, with Map, hands the mapped matrices' pages back to the system once they
	// are checked (madvise MADV_DONTNEED): they fault in again from the page cache
	// when used, so a process that rewrites an index one matrix at a time holds one
	// matrix's pages at a time, not all of them (see Index.ReleaseMapped).
	Release bool
}

// ReadFileWith is ReadFile with options.
func ReadFileWith(path string, opt ReadOptions) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("graphio: %w", err)
	}
	defer f.Close()
	if opt.Map {
		if m, err := mapFile(f); err == nil {
			ix, err := ReadWith(&mappedReader{b: m}, opt)
			if err != nil {
				_ = unmapFile(m) // nothing refers to it once ReadWith has returned an error
				return nil, fmt.Errorf("graphio: %s: %w", path, err)
			}
			if opt.Release {
				ix.mapping = m
				for _, e := range ix.Embeddings {
					ix.ReleaseMapped(e)
				}
			}
			return ix, nil
		}
		// Not mappable (an empty file, a pipe, an unsupported system): read it.
	}
	ix, err := ReadWith(bufio.NewReaderSize(f, 1<<20), opt)
	if err != nil {
		return nil, fmt.Errorf("graphio: %s: %w", path, err)
	}
	return ix, nil
}

// Read decodes an index from r, one section at a time. A wrong magic, an unknown
// version, a checksum mismatch, a truncated stream or a malformed section is an error
// wrapping ErrNotIndex, ErrVersion, ErrChecksum, ErrTruncated or ErrCorrupt; it never
// panics on bad input.
func Read(r io.Reader) (*Index, error) { return ReadWith(r, ReadOptions{}) }

// skipSection reports whether opt leaves out the section named name: an embedding
// matrix of a kind opt.Embeddings rejects.
func (opt ReadOptions) skipSection(name string) (NodeKind, bool) {
	if opt.Embeddings == nil {
		return 0, false
	}
	for _, prefix := range []string{rawPrefix, sparsePrefix, densePrefix} {
		if k, err := ParseNodeKind(strings.TrimPrefix(name, prefix)); strings.HasPrefix(name, prefix) && err == nil {
			return k, !opt.Embeddings(k)
		}
	}
	return 0, false
}

// ReadWith is Read with options.
func ReadWith(r io.Reader, opt ReadOptions) (*Index, error) {
	head := make([]byte, 12)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	if m := min(n, len(Magic)); string(head[:m]) != Magic[:m] {
		return nil, ErrNotIndex
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: empty file", ErrTruncated)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: header has %d of 12 bytes", ErrTruncated, n)
	}
	version := binary.LittleEndian.Uint32(head[8:])
	if version < MinFormatVersion || version > FormatVersion {
		return nil, fmt.Errorf("%w %d (this graphloom reads versions %d to %d)", ErrVersion, version, MinFormatVersion, FormatVersion)
	}
	// One goroutine reads and checksums the sections in order; workers inflate them
	// (and unshuffle embedding matrices) concurrently, while the next ones are read;
	// the decoding runs here, in order, so errors come out in file order, as a
	// sequential reader would report them. At most 2 × workers sections are read but
	// not yet decoded, and each section's stored and inflated bytes are dropped once
	// used, so a large index is not held three times over (stored, inflated, decoded).
	skip := func(name string) bool { _, skip := opt.skipSection(name); return skip }
	workers := max(1, runtime.GOMAXPROCS(0))
	zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(workers), zstd.WithDecoderMaxMemory(maxSection),
		zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	type job struct {
		sec storedSection
		out chan inflatedSection
	}
	type pending struct {
		name string
		out  chan inflatedSection
	}
	ahead := make(chan struct{}, 2*workers) // sections read but not yet decoded
	queue := make(chan pending, 2*workers)  // the same, in file order
	jobs := make(chan job)
	quit := make(chan struct{})
	var readErr error // set by the reader before it closes queue
	var wg sync.WaitGroup
	defer func() {
		close(quit)
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		defer close(queue)
		var scratch []byte      // reused for the sections opt leaves out
		off := int64(len(head)) // file offset of the next section
		for {
			select {
			case ahead <- struct{}{}:
			case <-quit:
				return
			}
			sec, err := readStored(r, off, skip, &scratch)
			if err == nil {
				err = sec.checkCodec(version)
			}
			if err != nil {
				readErr = err
				return
			}
			off += sectionHeader(sec.name) + int64(sec.storedLen)
			out := make(chan inflatedSection, 1)
			select {
			case jobs <- job{sec, out}:
			case <-quit:
				return
			}
			select {
			case queue <- pending{sec.name, out}:
			case <-quit:
				return
			}
			if sec.name == endSection {
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if skip(j.sec.name) {
					j.out <- inflatedSection{}
				} else {
					j.out <- j.sec.inflate(zr)
				}
			}
		}()
	}

	ix := &Index{}
	seen := map[string]bool{}
	next := 0 // index into sections of the next required section
	count := 0
	for p := range queue {
		in := <-p.out
		<-ahead
		name, payload := p.name, in.payload
		if err := in.err; err != nil {
			return nil, err
		}
		if name == endSection {
			d := &dec{b: payload}
			n := d.uvarint()
			if err := d.done(endSection); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
			if n != uint64(count) {
				return nil, fmt.Errorf("%w: end section counts %d sections, file has %d", ErrCorrupt, n, count)
			}
			break
		}
		count++
		if seen[name] {
			return nil, fmt.Errorf("%w: section %q appears twice", ErrCorrupt, name)
		}
		seen[name] = true
		if next < len(sections) {
			if name != sections[next].name {
				return nil, fmt.Errorf("%w: expected section %q, found %q", ErrCorrupt, sections[next].name, name)
			}
			if err := sections[next].decode(ix, &dec{b: payload}); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
			next++
			continue
		}
		if k, skip := opt.skipSection(name); skip {
			ix.skipped = append(ix.skipped, k)
			continue
		}
		if _, err := decodeOptional(ix, name, payload, in.emb); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		// Unknown optional sections are skipped: a newer writer may add some.
	}
	if readErr != nil {
		return nil, readErr
	}
	if next < len(sections) {
		return nil, fmt.Errorf("%w: missing section %q", ErrCorrupt, sections[next].name)
	}
	var one [1]byte
	if n, _ := r.Read(one[:]); n > 0 {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, errTrailing)
	}
	if err := ix.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	// Fact ids are derived from entity names, so they are recomputed, not stored.
	ids := idColumn(len(ix.Facts), "fact-", func(b []byte, i int) []byte {
		f := &ix.Facts[i]
		return appendFactString(b, ix.Entities[f.Subject].Name, f.Predicate, ix.Entities[f.Object].Name) // FactID
	})
	for i := range ix.Facts {
		ix.Facts[i].ID = ids[i]
	}
	return ix, nil
}

// maxInflation bounds a compressed section's raw length by its stored length, past a
// floor no real section's ratio comes near: a few kilobytes of crafted zstd can
// declare and inflate to tens of gigabytes.
const (
	maxInflation      = 1024
	maxInflationFloor = 256 << 20
)

// checkCodec refuses a codec the file's version never writes (version 3 stores every
// section uncompressed) and a compressed section that claims to inflate past
// maxInflation times its stored size.
func (s storedSection) checkCodec(version uint32) error {
	switch {
	case s.codec == codecZstd && version >= 3:
		return fmt.Errorf("%w: section %.40q is zstd-compressed, which a version %d file never is", ErrCorrupt, s.name, version)
	case s.codec == codecZstd && s.rawLen > max(maxInflationFloor, maxInflation*s.storedLen):
		return fmt.Errorf("%w: section %.40q claims to inflate %d stored bytes to %d", ErrCorrupt, s.name, s.storedLen, s.rawLen)
	}
	return nil
}

// storedSection is a section as stored: its name, codec, raw length and the stored
// (possibly compressed) bytes, checksum verified.
type storedSection struct {
	name      string
	codec     byte
	rawLen    uint64
	storedLen uint64
	stored    []byte // nil for a section left out
	// verify says that the stored bytes are yet to be checked against want, crc being
	// the checksum of the header alone (a mapped file's, see readStored).
	verify    bool
	crc, want uint32
}

// inflatedSection is a section's payload, with an embedding matrix already decoded
// (parseEmbedding) when the section holds one.
type inflatedSection struct {
	payload []byte
	emb     *parsedEmbedding
	err     error
}

// readStored reads one section, at file offset off, its header and stored bytes and
// verifies its checksum. The stored bytes sit at an address congruent to their file
// offset modulo rawAlign, so a raw matrix in them is aligned as in the file; from a
// mappedReader they are the mapping itself.
func readStored(r io.Reader, off int64, skip func(name string) bool, scratch *[]byte) (storedSection, error) {
	var nl [1]byte
	if _, err := io.ReadFull(r, nl[:]); err != nil {
		return storedSection{}, fmt.Errorf("%w: stream ends before the end section", ErrTruncated)
	}
	h := make([]byte, 1+int(nl[0])+1+8+8+4)
	h[0] = nl[0]
	if _, err := io.ReadFull(r, h[1:]); err != nil {
		return storedSection{}, fmt.Errorf("%w: section header cut short", ErrTruncated)
	}
	nameLen := int(nl[0])
	name := string(h[1 : 1+nameLen])
	p := h[1+nameLen:]
	codec := p[0]
	rawLen := binary.LittleEndian.Uint64(p[1:])
	storedLen := binary.LittleEndian.Uint64(p[9:])
	want := binary.LittleEndian.Uint32(p[17:])
	if storedLen > maxSection || rawLen > maxSection {
		return storedSection{}, fmt.Errorf("%w: section %.40q claims %d bytes", ErrCorrupt, name, storedLen)
	}
	sec := storedSection{name: name, codec: codec, rawLen: rawLen, storedLen: storedLen}
	crc := crc32.Checksum(h[:len(h)-4], castagnoli)
	if m, ok := r.(*mappedReader); ok {
		stored, err := m.take(storedLen)
		if err != nil {
			return storedSection{}, fmt.Errorf("%w: section %.40q has %d of %d bytes", ErrTruncated, name, len(stored), storedLen)
		}
		// A section read from the mapping is checksummed by the worker that decodes
		// it, so that the checksums of large sections run on every core; one left out
		// is not checksummed at all: its pages are never touched.
		if skip == nil || !skip(name) {
			sec.stored, sec.verify, sec.crc, sec.want = stored, true, crc, want
		}
		return sec, nil
	}
	// A section the reader leaves out is checksummed through one reused buffer and not
	// kept: allocating it would cost more than reading it (a cold query process pays
	// for every page it touches).
	if skip != nil && skip(name) {
		const step = 1 << 20
		if len(*scratch) < step {
			*scratch = make([]byte, step)
		}
		for left := storedLen; left > 0; {
			n := int(min(left, step))
			got, err := io.ReadFull(r, (*scratch)[:n])
			crc = crc32.Update(crc, castagnoli, (*scratch)[:got])
			if err != nil {
				return storedSection{}, fmt.Errorf("%w: section %.40q has %d of %d bytes", ErrTruncated, name, storedLen-left+uint64(got), storedLen)
			}
			left -= uint64(n)
		}
		if crc != want {
			return storedSection{}, fmt.Errorf("section %.40q: %w", name, ErrChecksum)
		}
		return sec, nil
	}
	// Read in steps of at most readStep, so a corrupt length cannot allocate much more
	// than the stream holds, and a section that fits in one step is allocated once.
	const readStep = 32 << 20
	payloadOff := off + int64(len(h))
	stored := alignedBytes(0, int(min(storedLen, readStep)), payloadOff)
	for uint64(len(stored)) < storedLen {
		n := int(min(storedLen-uint64(len(stored)), readStep))
		if cap(stored)-len(stored) < n {
			grown := alignedBytes(len(stored), int(min(storedLen, uint64(max(2*cap(stored), len(stored)+n)))), payloadOff)
			copy(grown, stored)
			stored = grown
		}
		got, err := io.ReadFull(r, stored[len(stored):len(stored)+n])
		stored = stored[:len(stored)+got]
		if err != nil {
			return storedSection{}, fmt.Errorf("%w: section %.40q has %d of %d bytes", ErrTruncated, name, len(stored), storedLen)
		}
	}
	if crc32.Update(crc, castagnoli, stored) != want {
		return storedSection{}, fmt.Errorf("section %.40q: %w", name, ErrChecksum)
	}
	sec.stored = stored
	return sec, nil
}

// alignedBytes returns a new buffer of length n and capacity c whose first byte's
// address is congruent to off modulo rawAlign.
func alignedBytes(n, c int, off int64) []byte {
	b := make([]byte, c+rawAlign-1)
	at := uint64(off) - uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	s := int(at % rawAlign)
	return b[s : s+n : s+c]
}

// mappedReader reads a memory-mapped file; take hands out its bytes without copying.
type mappedReader struct {
	b   []byte
	pos int
}

func (m *mappedReader) Read(p []byte) (int, error) {
	if m.pos >= len(m.b) {
		return 0, io.EOF
	}
	n := copy(p, m.b[m.pos:])
	m.pos += n
	return n, nil
}

// take returns the next n bytes, or the ones left and an error when fewer remain.
func (m *mappedReader) take(n uint64) ([]byte, error) {
	left := uint64(len(m.b) - m.pos)
	if n > left {
		m.pos = len(m.b)
		return m.b[len(m.b)-int(left):], io.ErrUnexpectedEOF
	}
	out := m.b[m.pos : m.pos+int(n) : m.pos+int(n)]
	m.pos += int(n)
	return out, nil
}

// inflate decompresses the section and, for an embedding section, decodes its
// matrix. It is safe to call concurrently with one decoder.
func (s storedSection) inflate(zr *zstd.Decoder) inflatedSection {
	if s.verify && crc32.Update(s.crc, castagnoli, s.stored) != s.want {
		return inflatedSection{err: fmt.Errorf("section %.40q: %w", s.name, ErrChecksum)}
	}
	var out []byte
	switch s.codec {
	case codecRaw:
		if s.rawLen != uint64(len(s.stored)) {
			return inflatedSection{err: fmt.Errorf("%w: section %q: raw length %d ≠ stored %d", ErrCorrupt, s.name, s.rawLen, len(s.stored))}
		}
		out = s.stored
	case codecZstd:
		// rawLen is bounded by checkCodec; the decoder stops past it (cap limit), so a
		// crafted section cannot inflate beyond what its header declares.
		// The buffer starts at a size typical sections fit (the header is not trusted
		// for a large allocation up front); a more compressible one is decoded again
		// into its declared size.
		var err error
		first := min(s.rawLen, 64*s.storedLen+1<<20)
		out, err = zr.DecodeAll(s.stored, make([]byte, 0, first))
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) && first < s.rawLen {
			out, err = zr.DecodeAll(s.stored, make([]byte, 0, s.rawLen))
		}
		if err != nil {
			return inflatedSection{err: fmt.Errorf("%w: section %q: zstd: %v", ErrCorrupt, s.name, err)}
		}
		if uint64(len(out)) != s.rawLen {
			return inflatedSection{err: fmt.Errorf("%w: section %q decompresses to %d bytes, header says %d", ErrCorrupt, s.name, len(out), s.rawLen)}
		}
	default:
		return inflatedSection{err: fmt.Errorf("%w: section %q: unknown codec %d", ErrCorrupt, s.name, s.codec)}
	}
	if pe := parseEmbedding(s.name, out); pe != nil {
		return inflatedSection{emb: pe} // the matrix holds what it needs of out
	}
	return inflatedSection{payload: out}
}
