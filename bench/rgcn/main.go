// Command rgcn benchmarks one training step of the CrossAug-sized R-GCN scorer
// (input 384 → hidden 256, 2 layers, 3 relations, mean‖max pooling, MLP head) on
// batches of 64 random subgraphs of 20–40 nodes, and can dump the exact batches for
// the PyTorch twin (bench/rgcn_torch.py). Run it through bench/rgcn.sh.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
)

type options struct {
	graphs, minNodes, maxNodes   int
	edgesPerNode                 float64
	feat, hidden, relations      int
	batches, warmup, steps       int
	tile, slots                  int
	seed                         uint64
	dump, backend, jsonOut, mode string
	cpuProfile                   string
}

func main() {
	var o options
	flag.IntVar(&o.graphs, "graphs", 64, "subgraphs per batch")
	flag.IntVar(&o.minNodes, "min-nodes", 20, "minimum nodes per subgraph")
	flag.IntVar(&o.maxNodes, "max-nodes", 40, "maximum nodes per subgraph")
	flag.Float64Var(&o.edgesPerNode, "edges-per-node", 1, "undirected edges per node (each added in both directions)")
	flag.IntVar(&o.feat, "feat", 384, "node feature width")
	flag.IntVar(&o.hidden, "hidden", 256, "hidden width")
	flag.IntVar(&o.relations, "relations", 3, "relations")
	flag.IntVar(&o.batches, "batches", 4, "distinct batches cycled through")
	flag.IntVar(&o.warmup, "warmup", 3, "untimed steps after compiling")
	flag.IntVar(&o.steps, "steps", 20, "timed steps")
	flag.IntVar(&o.tile, "tile", 64, "tile size (0 = sequential layout with gather/scatter)")
	flag.IntVar(&o.slots, "slots", 4, "graph slots per tile")
	flag.Uint64Var(&o.seed, "seed", 1, "random seed")
	flag.StringVar(&o.dump, "dump", "", "write the batches' graph structure as JSON to this file")
	flag.StringVar(&o.backend, "backend", "", "backend (default $GOMLX_BACKEND or go)")
	flag.StringVar(&o.jsonOut, "json", "", "write the result as JSON to this file")
	flag.StringVar(&o.mode, "mode", "train", "train: full step (forward, backward, Adam); forward: predictions only")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the timed steps to this file")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "rgcn:", err)
		os.Exit(1)
	}
}

// graphJSON is the structure the PyTorch twin reads.
type graphJSON struct {
	N        int     `json:"n"`
	Src      []int32 `json:"src"`
	Dst      []int32 `json:"dst"`
	EdgeType []int32 `json:"etype"`
	NodeType []int32 `json:"ntype"`
	Label    float32 `json:"label"`
}

// makeBatches draws o.batches lists of random subgraphs.
func makeBatches(o options, rng *rand.Rand) ([][]*kernels.Graph, [][]float32) {
	var gs [][]*kernels.Graph
	var labels [][]float32
	for range o.batches {
		var batch []*kernels.Graph
		var ls []float32
		for range o.graphs {
			n := o.minNodes + rng.IntN(o.maxNodes-o.minNodes+1)
			g := &kernels.Graph{NumNodes: n, NodeType: make([]int32, n), X: make([]float32, n*o.feat)}
			for i := range g.NodeType {
				g.NodeType[i] = int32(rng.IntN(3))
			}
			for i := range g.X {
				g.X[i] = float32(rng.NormFloat64())
			}
			m := int(float64(n)*o.edgesPerNode + 0.5)
			for range m {
				s, d, r := int32(rng.IntN(n)), int32(rng.IntN(n)), int32(rng.IntN(o.relations))
				g.Src = append(g.Src, s, d)
				g.Dst = append(g.Dst, d, s)
				g.EdgeType = append(g.EdgeType, r, r)
			}
			batch = append(batch, g)
			ls = append(ls, float32(rng.IntN(2)))
		}
		gs = append(gs, batch)
		labels = append(labels, ls)
	}
	return gs, labels
}

// bucketer returns buckets that fit o's batches: a ladder up to the worst case.
func bucketer(o options) (*kernels.Bucketer, error) {
	spec := kernels.Spec{FeatDim: o.feat, NumRelations: o.relations, NumNodeTypes: 3}
	maxEdges := int(float64(o.maxNodes)*o.edgesPerNode+0.5) * 2 * o.graphs
	if o.tile > 0 {
		layout := kernels.Layout{TileSize: o.tile, GraphsPerTile: o.slots}
		// Up to every graph at its maximum size, with 10% slack for packing losses.
		top := kernels.Bucket{Nodes: o.graphs * o.maxNodes * 11 / 10, Edges: maxEdges * 11 / 10}
		buckets, err := kernels.Ladder(top, 1.05, 16, layout)
		if err != nil {
			return nil, err
		}
		return kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Layout: layout, Buckets: buckets})
	}
	top := kernels.Bucket{Nodes: o.graphs * o.maxNodes, Edges: maxEdges, Graphs: o.graphs}
	buckets, err := kernels.Ladder(top, 1.06, 16, kernels.Layout{})
	if err != nil {
		return nil, err
	}
	for i := range buckets {
		buckets[i].Graphs = o.graphs
	}
	return kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Buckets: buckets})
}

type result struct {
	Backend      string  `json:"backend"`
	Mode         string  `json:"mode"`
	Layout       string  `json:"layout"`
	MsPerStep    float64 `json:"ms_per_step"`     // median
	MsMean       float64 `json:"ms_mean"`         // mean
	MsMin        float64 `json:"ms_min"`          // fastest step
	CPUMsPerStep float64 `json:"cpu_ms_per_step"` // process CPU time (all threads) per timed step
	RealNodes    float64 `json:"real_nodes"`      // mean per batch
	PaddedNodes  float64 `json:"padded_nodes"`    // mean rows per batch
	RealEdges    float64 `json:"real_edges"`      // mean per batch
	Compilations int64   `json:"compilations"`    // total
	CompileSecs  float64 `json:"compile_secs"`    // warm-up wall time (compiles + first steps)
	Params       int     `json:"params"`          // trainable parameters
	FinalLoss    float64 `json:"final_loss"`      // last training loss
	RecompiledOK bool    `json:"no_recompiles"`   // no compilation during the timed steps
}

func run(o options) error {
	rng := rand.New(rand.NewPCG(o.seed, 7))
	graphs, labels := makeBatches(o, rng)
	if o.dump != "" {
		var out [][]graphJSON
		for bi, batch := range graphs {
			var bj []graphJSON
			for gi, g := range batch {
				bj = append(bj, graphJSON{N: g.NumNodes, Src: g.Src, Dst: g.Dst, EdgeType: g.EdgeType, NodeType: g.NodeType, Label: labels[bi][gi]})
			}
			out = append(out, bj)
		}
		data, err := json.Marshal(map[string]any{"feat": o.feat, "hidden": o.hidden, "relations": o.relations, "batches": out})
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.dump, data, 0o644); err != nil {
			return err
		}
	}
	bk, err := bucketer(o)
	if err != nil {
		return err
	}
	var exs []train.Example
	res := result{Mode: o.mode, Layout: "sequential"}
	if o.tile > 0 {
		res.Layout = fmt.Sprintf("tiled T=%d S=%d", o.tile, o.slots)
	}
	for i, gs := range graphs {
		b, err := bk.Batch(gs)
		if err != nil {
			return err
		}
		exs = append(exs, train.Example{Batch: b, Labels: labels[i]})
		res.RealNodes += float64(b.NumNodes) / float64(len(graphs))
		res.PaddedNodes += float64(b.Bucket.Nodes) / float64(len(graphs))
		res.RealEdges += float64(b.NumEdges) / float64(len(graphs))
	}

	eng, err := engine.New(engine.Config{Backend: o.backend})
	if err != nil {
		return err
	}
	defer eng.Close()
	res.Backend = eng.BackendConfig()
	info := eng.Info()
	fmt.Printf("engine: %s, cpu %s, simd build %v (GOEXPERIMENT=%q), gomlx %s\n",
		info.BackendConfig, info.CPUSIMD, info.SIMDBuild, info.GoExperiment, info.GoMLXVersion)
	store := model.NewStore()
	cfg := models.DefaultRGCNConfig(o.feat)
	cfg.Hidden, cfg.HeadHidden, cfg.NumRelations = o.hidden, o.hidden, o.relations
	m, err := models.NewRGCNClassifier(store, cfg)
	if err != nil {
		return err
	}
	for _, v := range m.Variables() {
		if v.Trainable {
			res.Params += v.Shape().Size()
		}
	}
	tcfg := train.DefaultConfig()
	tr, err := train.New(eng, m, tcfg)
	if err != nil {
		return err
	}
	step := func(i int) error {
		ex := exs[i%len(exs)]
		if o.mode == "forward" {
			_, err := tr.Predict(ex.Batch)
			return err
		}
		st, err := tr.Step(ex)
		res.FinalLoss = st.Loss
		return err
	}
	t0 := time.Now()
	for i := range len(exs) + o.warmup {
		if err := step(i); err != nil {
			return err
		}
	}
	res.CompileSecs = time.Since(t0).Seconds()
	before := eng.Stats().Compilations
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	cpu0 := cpuSeconds()
	times := make([]float64, o.steps)
	for i := range o.steps {
		t := time.Now()
		if err := step(i); err != nil {
			return err
		}
		times[i] = float64(time.Since(t).Microseconds()) / 1000
	}
	res.CPUMsPerStep = (cpuSeconds() - cpu0) * 1000 / float64(o.steps)
	res.Compilations = eng.Stats().Compilations
	res.RecompiledOK = res.Compilations == before
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	res.MsPerStep = sorted[len(sorted)/2]
	res.MsMin = sorted[0]
	for _, t := range times {
		res.MsMean += t / float64(len(times))
	}
	fmt.Printf("graphloom %-10s %-22s %8.1f ms/step (mean %.1f, min %.1f, cpu %.1f)  nodes %.0f→%.0f rows, edges %.0f, params %d, compiles %d\n",
		res.Backend, res.Layout, res.MsPerStep, res.MsMean, res.MsMin, res.CPUMsPerStep, res.RealNodes, res.PaddedNodes, res.RealEdges, res.Params, res.Compilations)
	if o.jsonOut != "" {
		data, err := json.Marshal(res)
		if err != nil {
			return err
		}
		return os.WriteFile(o.jsonOut, data, 0o644)
	}
	return nil
}

// cpuSeconds returns the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
