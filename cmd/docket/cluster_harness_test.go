package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The cluster suite runs docket as separate processes — two API nodes
// (api,projections,duties) and two worker nodes — against a real Kafka
// cluster of three brokers (replication factor 3, min.insync.replicas 2),
// and kills them with SIGKILL. It runs when DOCKET_TEST_CLUSTER_BROKERS
// names such a cluster (`scripts/kafka.sh start 3`); `make test-cluster`
// sets it up. Without it the suite is skipped with that message.
const clusterEnv = "DOCKET_TEST_CLUSTER_BROKERS"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the binary docketBinary built, once every test is
// done: until 2026-12-07 each run of the cluster suite left its 50 MB in
// $TMPDIR (54 of them on this machine).
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// docketBinary builds the docket binary once per test run from this
// source tree, in a temporary directory TestMain removes.
func docketBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "docket-cluster-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "docket")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type cluster struct {
	t       *testing.T
	brokers string
	prefix  string
	blobs   string
	nodes   map[string]*proc
}

// proc is one docket process.
type proc struct {
	name    string
	args    []string
	dataDir string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

func setupCluster(t *testing.T) *cluster {
	t.Helper()
	brokers := os.Getenv(clusterEnv)
	if brokers == "" {
		t.Skipf("cluster suite skipped: set %s to a 3-broker Kafka cluster (make test-cluster starts one)", clusterEnv)
	}
	c := &cluster{t: t, brokers: brokers, prefix: "cl-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "-" + fmt.Sprint(time.Now().UnixNano()%1e6),
		blobs: t.TempDir(), nodes: map[string]*proc{}}
	t.Cleanup(c.stopAll)
	c.start("api-1", "api,projections,duties")
	c.start("api-2", "api,projections,duties")
	c.start("worker-1", "worker")
	c.start("worker-2", "worker")
	return c
}

func (c *cluster) start(name, roles string) *proc {
	c.t.Helper()
	p := &proc{name: name, dataDir: c.t.TempDir(), logPath: filepath.Join(c.t.TempDir(), name+".log")}
	p.args = []string{"serve", "--roles", roles, "--kafka-brokers", c.brokers, "--topic-prefix", c.prefix,
		"--data-dir", p.dataDir, "--blob-dir", c.blobs, "--listen", "127.0.0.1:0", "--partitions", "6",
		"--replication-factor", "3", "--min-insync-replicas", "2", "--worker-concurrency", "2", "--log-level", "info"}
	if ep := os.Getenv("DOCKET_TEST_S3_ENDPOINT"); ep != "" {
		// Nodes on different machines share documents through S3.
		p.args = append(p.args, "--blob-store", "s3://"+os.Getenv("DOCKET_TEST_S3_BUCKET")+"/"+c.prefix,
			"--s3-endpoint", ep, "--s3-access-key", os.Getenv("DOCKET_TEST_S3_ACCESS_KEY"),
			"--s3-secret-key", os.Getenv("DOCKET_TEST_S3_SECRET_KEY"))
	}
	c.nodes[name] = p
	c.run(p)
	return p
}

// startDocket runs the docket binary with args, its output appended to
// logPath; done closes when the process has exited.
func startDocket(t *testing.T, logPath string, args []string) (cmd *exec.Cmd, done chan struct{}) {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(docketBinary(t), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	return cmd, done
}

func (c *cluster) run(p *proc) {
	c.t.Helper()
	p.cmd, p.done = startDocket(c.t, p.logPath, p.args)
	if strings.Contains(strings.Join(p.args, " "), "api") {
		c.waitReady(p)
	} else {
		c.waitLog(p, "docket node running without HTTP API")
	}
}

// waitReady waits for the node's http.addr and a 200 from /readyz.
func (c *cluster) waitReady(p *proc) {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			c.t.Fatalf("%s exited during start:\n%s", p.name, tail(p.logPath))
		default:
		}
		if addr, err := os.ReadFile(filepath.Join(p.dataDir, "http.addr")); err == nil {
			resp, err := http.Get("http://" + strings.TrimSpace(string(addr)) + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond) // polling a child process's start-up; nothing to subscribe to
	}
	c.t.Fatalf("%s not ready:\n%s", p.name, tail(p.logPath))
}

func (c *cluster) waitLog(p *proc, msg string) {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(tail(p.logPath), msg) {
			return
		}
		select {
		case <-p.done:
			c.t.Fatalf("%s exited during start:\n%s", p.name, tail(p.logPath))
		case <-time.After(100 * time.Millisecond):
		}
	}
	c.t.Fatalf("%s: %q not logged:\n%s", p.name, msg, tail(p.logPath))
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *cluster) kill(name string) {
	p := c.nodes[name]
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (c *cluster) stopAll() {
	for _, p := range c.nodes {
		select {
		case <-p.done:
			continue
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
		if c.t.Failed() {
			c.t.Logf("--- %s log (tail):\n%s", p.name, tail(p.logPath))
		}
	}
}

func (c *cluster) url(name, path string) string {
	addr, err := os.ReadFile(filepath.Join(c.nodes[name].dataDir, "http.addr"))
	if err != nil {
		c.t.Fatal(err)
	}
	return "http://" + strings.TrimSpace(string(addr)) + path
}

func (c *cluster) key() string {
	b, err := os.ReadFile(filepath.Join(c.nodes["api-1"].dataDir, "api-key"))
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// call sends a request to one node and decodes the JSON answer.
func (c *cluster) call(node, method, path string, body *strings.Reader, ct string, out any) (int, []byte) {
	c.t.Helper()
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequest(method, c.url(node, path), body)
	} else {
		req, err = http.NewRequest(method, c.url(node, path), nil)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key())
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var buf strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&buf)
	raw := []byte(buf.String())
	if out != nil && len(raw) > 0 {
		_ = json.Unmarshal(raw, out)
	}
	return resp.StatusCode, raw
}

// applied reads a node's applied offsets from /readyz.
func (c *cluster) applied(node string) map[string]int64 {
	resp, err := http.Get(c.url(node, "/readyz"))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var r struct {
		Applied map[string]int64 `json:"applied"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&r)
	return r.Applied
}

// eventually re-checks cond until it holds, for at most limit. The cluster
// runs in other processes, so there is no in-process event to wait on; the
// conditions read the views and the log.
func (c *cluster) eventually(limit time.Duration, what string, cond func() bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			c.t.Fatalf("%s: not reached within %s", what, limit)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func jsonDecode(resp *http.Response, out any) error { return json.NewDecoder(resp.Body).Decode(out) }
