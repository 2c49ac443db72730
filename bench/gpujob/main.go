// Command gpujob is the one binary of the GPU job (bench/gpu.sh): built on a build
// machine with -tags xla, shipped gzip-compressed to a locked-down GPU node that has
// no Go, no C compiler and no network, and run there step by step. Each subcommand
// prints one JSON line (and nothing else on stdout):
//
//	gpujob inputs DIR               write the job's inputs (tiny random model folders,
//	                                batch structures, the PPR graph, G-Retriever examples)
//	gpujob check DIR                load every input on the CPU (dry run: no GPU step)
//	gpujob glibc FILE               the newest GLIBC_x.y symbol version FILE needs
//	gpujob rgcn [-tile N]           CrossAug R-GCN training step (bench/rgcn's model and batches)
//	gpujob gt                       Graph Transformer forward + backward (bench/gt's)
//	gpujob gretriever -lm DIR       G-Retriever training steps through the tiny LM folder
//	gpujob ppr -graph FILE          batched PPR through kernels.PPRGoMLX
//	gpujob embed -dir DIR           the local sentence encoder (models/encoder)
//	gpujob lm -dir DIR -out FILE    logits and greedy tokens for bench/hf_parity.py
//
// The backend is $GOMLX_BACKEND (bench/gpu.sh sets xla:<plugin>). The batches are
// drawn from fixed seeds, so `inputs` writes exactly the structures the timed steps
// use and the PyTorch scripts read them.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// A command is one subcommand: it parses its flags and returns its JSON record.
type command struct {
	name, usage string
	run         func(args []string) (map[string]any, error)
}

func commands() []command {
	return []command{
		{"inputs", "inputs DIR", runInputs},
		{"check", "check DIR", runCheck},
		{"glibc", "glibc FILE", runGlibc},
		{"rgcn", "rgcn [flags]", runRGCN},
		{"gt", "gt [flags]", runGT},
		{"gretriever", "gretriever -lm DIR [flags]", runGRetriever},
		{"ppr", "ppr -graph FILE [-out FILE]", runPPR},
		{"embed", "embed -dir DIR [-out FILE]", runEmbed},
		{"lm", "lm -dir DIR -out FILE", runLM},
	}
}

func main() {
	if err := dispatch(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gpujob:", err)
		os.Exit(1)
	}
}

func dispatch(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage())
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		rec, err := c.run(args[1:])
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		rec["step"] = c.name
		line, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(line))
		return err
	}
	return fmt.Errorf("unknown subcommand %q\n%s", args[0], usage())
}

func usage() string {
	s := "usage: gpujob SUBCOMMAND [args]; subcommands:"
	for _, c := range commands() {
		s += "\n  " + c.usage
	}
	return s
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	return fs
}

// timing is the median and minimum of repeated measurements, in milliseconds.
type timing struct{ median, min float64 }

// timeSteps runs step warmup times untimed (compilation), then steps times timed.
func timeSteps(warmup, steps int, step func(i int) error) (timing, float64, error) {
	t0 := time.Now()
	for i := range warmup {
		if err := step(i); err != nil {
			return timing{}, 0, err
		}
	}
	compile := time.Since(t0).Seconds()
	times := make([]float64, steps)
	for i := range steps {
		t := time.Now()
		if err := step(i); err != nil {
			return timing{}, 0, err
		}
		times[i] = float64(time.Since(t).Microseconds()) / 1000
	}
	slices.Sort(times)
	return timing{median: times[len(times)/2], min: times[0]}, compile, nil
}

// writeJSON writes v to path.
func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
