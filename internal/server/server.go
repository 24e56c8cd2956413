package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/mcp"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/procenv"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/sandbox"
	"github.com/agentslice/agentslice/internal/rap/tools"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Paths of the HTTP API that other parts refer to.
const (
	CallbackPath = "/rap/callback"
	ToolsPrefix  = "/tools/"
)

// Options are what a caller may inject besides the configuration.
type Options struct {
	Logger *slog.Logger
	// Getenv reads CallbackKeysEnv and model API keys; default os.Getenv.
	Getenv func(string) string
	// ModelOptions are passed to model.FromConfig (tests: an HTTP client).
	ModelOptions []model.Option
	// RAPRetry, when set, replaces the retry policy of invocations and of
	// the in-process tool servers' callbacks (tests shorten it).
	RAPRetry *rap.RetryPolicy
	// Model, when set, replaces the configured model (tests script or
	// pace completions with it).
	Model runtime.Model
	// PendingCalls, when set, is asked at start about each call to an
	// external tool server that was dispatched before a restart and has no
	// result yet (see PendingCallChecker).
	PendingCalls PendingCallChecker
	// Tracer, when set, traces every slice (runtime.Engine.Tracer; serve
	// builds it from the OTEL_* environment with internal/otelx).
	Tracer runtime.Tracer
}

// service is an in-process tool server mounted under ToolsPrefix.
type service interface {
	http.Handler
	Start(ctx context.Context) error
	Stop()
}

type mounted struct {
	name string // path under ToolsPrefix, e.g. "examples" or "mcp/everything"
	svc  service
}

// Server is the local agent server. Build it with New, then Start; Stop
// shuts everything down and waits for it.
type Server struct {
	cfg   Config
	set   *settings
	log   *slog.Logger
	opts  Options
	model runtime.Model
	keys  *rap.Keyring
	token string // required on the API when set (auth.go)
	// agents is nil when the configuration defines none.
	agents *runtime.AgentSet
	// agentStore keeps every agent definition version this server ran
	// (versions.go).
	agentStore runtime.AgentStore

	ln     net.Listener
	url    string
	client *http.Client
	store  threadStore
	db     *disk.DB      // the sqlite store's data directory, else nil
	pool   *pgxpool.Pool // the postgres store's pool, else nil
	inbox  local.Inbox   // durable inbox, else nil
	// deadStore keeps the dead letters (disk store), else nil.
	deadStore local.DeadLetterStore
	recent    recentMessages // the text of recently accepted messages (failures.go)
	health    healthReport   // the latest probe of the parts (health.go)
	sys       *local.System
	timers    serveTimers
	disp      *rap.Dispatcher
	loader    *rap.Loader
	receiver  *rap.Receiver
	events    *Broadcaster
	services  []mounted
	proxies   []*mcp.Proxy     // also in services; checked at start
	sandbox   *sandbox.Manager // the sandbox toolset's (its first repository), else nil (sandbox.go)
	repos     *sandbox.Repos   // the sandbox toolset's repositories, else nil
	// inflight and running serve the event stream and the
	// human-in-the-loop endpoints (stream.go, hitl.go); choices, views and
	// display segments are in history.
	inflight inflight
	running  runningThreads
	answers  sync.Map   // thread \x00 call → true: answered, the answer's commit pending (hitl.go)
	models   modelSet   // the catalog's other models, for threads switched to them
	ledger   ledger     // the trees' budgets (budget.go)
	sleeps   sleepTimes // the timers the sleep tools get; knows when sleeps end
	httpSrv  *http.Server

	startOnce sync.Once
	started   bool
	stopOnce  sync.Once
	stopping  chan struct{}
	// backfillDone is closed when the postgres store's backfill ends
	// (backfill.go), else nil.
	backfillDone chan struct{}
	toolsets     toolsetHealth // allow-listed toolsets that could not be loaded
	wg           sync.WaitGroup
	serveErr     chan error
}

// New validates cfg, builds the model and the callback keyring, and returns
// a Server that is not yet listening. Configuration problems are
// *ConfigError values naming the field.
func New(ctx context.Context, cfg Config, opts Options) (*Server, error) {
	set, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	s := &Server{cfg: cfg, set: set, log: opts.Logger, opts: opts, stopping: make(chan struct{}), serveErr: make(chan error, 1)}
	mopts := append([]model.Option{model.WithGetenv(opts.Getenv)}, opts.ModelOptions...)
	if opts.Model != nil {
		s.model = opts.Model
	} else if s.model, err = model.FromConfig(ctx, set.model, mopts...); err != nil {
		var me *model.ConfigError
		if errors.As(err, &me) {
			return nil, prefixModelError(err)
		}
		return nil, fmt.Errorf("server: building model %q: %w", set.model.Name, err)
	}
	s.token = cfg.AuthToken
	if v := strings.TrimSpace(opts.Getenv(TokenEnv)); v != "" {
		s.token = v
	}
	if s.token == "" && !loopback(set.listen) {
		return nil, &ConfigError{Field: "auth_token", Reason: fmt.Sprintf("serve listens on %s, which is reachable from other machines: set auth_token or %s (loopback addresses need none)", set.listen, TokenEnv)}
	}
	// Agents' models are wrapped like the default one, so that their
	// completions stream deltas and can be stopped (stream.go).
	models := map[string]runtime.Model{set.model.Name: s.model}
	if err := s.buildAgents(func(name string) (runtime.Model, int, error) {
		if name == "" {
			return deltaModel{inner: s.model, srv: s}, set.model.ContextWindow, nil
		}
		mc, err := cfg.Models.Lookup(name) // resolve checked the name
		if err != nil {
			return nil, 0, err
		}
		if m, ok := models[name]; ok {
			return deltaModel{inner: m, srv: s}, mc.ContextWindow, nil
		}
		m, err := model.FromConfig(ctx, mc, mopts...)
		if err != nil {
			return nil, 0, err
		}
		models[name] = m
		return deltaModel{inner: m, srv: s}, mc.ContextWindow, nil
	}); err != nil {
		return nil, err
	}
	spec, field := cfg.CallbackKeys, "callback_keys"
	if v := strings.TrimSpace(opts.Getenv(CallbackKeysEnv)); v != "" {
		spec, field = v, CallbackKeysEnv
	}
	if spec != "" {
		if s.keys, err = rap.ParseKeyring(spec); err != nil {
			return nil, &ConfigError{Field: field, Reason: err.Error()}
		}
	} else if key, ok, err := s.persistentKey(); err != nil {
		return nil, err
	} else if ok {
		if s.keys, err = rap.NewKeyring(key); err != nil {
			return nil, fmt.Errorf("server: loading the callback key: %w", err)
		}
	} else {
		secret := make([]byte, rap.MinKeyLen)
		_, _ = rand.Read(secret) // never fails (crypto/rand)
		if s.keys, err = rap.NewKeyring(rap.Key{ID: "ephemeral", Secret: secret}); err != nil {
			return nil, fmt.Errorf("server: generating a callback key: %w", err)
		}
		s.log.Warn("no callback keys configured: generated a random key; callback URLs handed out now stop working after a restart",
			"set", CallbackKeysEnv+" or callback_keys")
	}
	return s, nil
}

// URL returns the public base URL (known once Start returned).
func (s *Server) URL() string { return s.url }

// Events returns the broadcaster of output events (known once Start
// returned).
func (s *Server) Events() *Broadcaster { return s.events }

// System returns the embedded system (known once Start returned).
func (s *Server) System() *local.System { return s.sys }

// Err delivers the error that ended HTTP serving early, if any.
func (s *Server) Err() <-chan error { return s.serveErr }

// Start listens, builds and starts the runtime and the tool servers, and
// serves the API until Stop. On error everything started is stopped again.
func (s *Server) Start(ctx context.Context) (err error) {
	first := false
	s.startOnce.Do(func() { first = true })
	if !first {
		return errors.New("server: already started")
	}
	s.started = true
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if s.ln, err = net.Listen("tcp", s.set.listen); err != nil {
		return fmt.Errorf("server: listening on %s: %w", s.set.listen, err)
	}
	s.url = s.set.publicURL
	if s.url == "" {
		s.url = "http://" + reachable(s.ln.Addr())
	}
	s.client = &http.Client{Timeout: 30 * time.Second,
		Transport: &tokenTransport{base: http.DefaultTransport.(*http.Transport).Clone(), self: s.url, token: s.token}}
	if err := s.openStore(ctx); err != nil {
		return err
	}
	if err := s.keepAgentVersions(ctx); err != nil {
		return err
	}
	s.sleeps.Timers = s.timers // the sleep tools' timers, remembering when sleeps end (hitl.go)
	s.events = NewBroadcaster(s.set.eventBuffer, s.log)

	// The sleep tools need the timers when the toolbox is built, and the
	// timers need the system as their queue: build the timers first and
	// give them the system once it exists (before anything can schedule).
	box := runtime.NewToolbox()
	for _, e := range append(runtime.ThreadTools(), runtime.SleepTools(&s.sleeps, nil)...) {
		if err := box.Add(e); err != nil {
			return fmt.Errorf("server: registering built-in tools: %w", err)
		}
	}
	retry := rap.RetryPolicy{}
	if s.opts.RAPRetry != nil {
		retry = *s.opts.RAPRetry
	}
	signer := &rap.Signer{Keys: s.keys, BaseURL: s.url + CallbackPath, TTL: s.set.callbackTTL}
	if s.disp, err = rap.NewDispatcher(rap.DispatcherConfig{Signer: signer, Client: s.client, Retry: retry, Logger: s.log}); err != nil {
		return fmt.Errorf("server: building the RAP dispatcher: %w", err)
	}
	if err := s.buildServices(retry); err != nil {
		return err
	}
	servers := append([]string(nil), s.cfg.ToolServers...)
	for _, m := range s.services {
		servers = append(servers, s.url+ToolsPrefix+m.name)
	}
	if s.loader, err = rap.NewLoader(rap.LoaderConfig{Servers: servers, Base: box, Dispatcher: s.disp, Client: s.client, Logger: s.log}); err != nil {
		return fmt.Errorf("server: building the RAP loader: %w", err)
	}
	var compaction *runtime.CompactionPolicy
	if !s.cfg.Compaction.Disabled {
		compaction = &runtime.CompactionPolicy{ContextWindow: s.set.model.ContextWindow, Threshold: s.cfg.Compaction.Threshold}
	}
	l := s.cfg.Limits
	var sched local.SchedulerConfig
	if mc := s.set.model; mc.Concurrency > 0 || mc.TokensPerMinute > 0 {
		// The catalog's limits for the model: calls wait for room instead
		// of meeting the provider's throttling.
		sched.Budget = &local.Budget{Concurrency: mc.Concurrency, TokensPerMinute: mc.TokensPerMinute,
			EstimateTokens: min(mc.MaxOutputTokens, mc.TokensPerMinute)}
	}
	s.recent.max = 10000
	s.running.next, s.running.srv = runtime.SlogObserver{Logger: s.log}, s
	var agents runtime.Agents
	if s.agents != nil {
		agents = s.agents
	}
	s.sys, err = local.New(local.Config{
		Model: deltaModel{inner: s.model, srv: s}, Tools: s.loader, History: newPublishingStore(s.store, s), Output: s.events,
		Logger: s.log, Observer: &s.running,
		Limits: runtime.Limits{MaxCompletions: l.MaxCompletions, ModelAttempts: l.ModelAttempts,
			MaxSubscriptions: l.MaxSubscriptions, MaxChildren: l.MaxChildren,
			MaxInheritedDepth: int(orDefault(int64(l.MaxInheritedDepth), MaxInheritedDepthDefault))},
		SliceAttempts: l.SliceAttempts, Compaction: compaction, Scheduler: sched, Agents: agents, Inbox: s.inbox,
		DeadLetters: s.deadStore, Tracer: s.opts.Tracer,
	})
	if err != nil {
		return fmt.Errorf("server: building the embedded system: %w", err)
	}
	s.events.now = s.sys.Engine().Clock
	s.timers.setQueue(s.sys)
	// Every dispatched call gets a deadline and status checks, armed
	// through the same timers as the sleeps (runtime/liveness.go).
	s.sys.Engine().Liveness = &runtime.Liveness{Timers: s.timers}
	// A thread whose model provider is down waits through them too
	// (runtime/provider_wait.go) instead of dead-lettering its message.
	pw := s.set.providerWait
	pw.Timers = s.timers
	s.sys.Engine().ProviderWait = &pw
	// Budgets: completions are priced and admitted against the threads'
	// and their trees' limits; trees' accounts live in the data directory
	// (in memory with the memory and PostgreSQL stores).
	ledger := s.openLedger()
	s.ledger = ledger
	s.sys.Engine().Budgets = &runtime.Budgets{Ledger: ledger, Prices: pricer{s}}
	// Choices, views and display segments travel in messages into the
	// threads' history (runtime/human.go), stamped with the engine's clock;
	// the views of a call still going on (a running command's output) are
	// display only until the call ends (rap.ReceiverConfig.LiveViews).
	if s.receiver, err = rap.NewReceiver(rap.ReceiverConfig{Keys: s.keys, Queue: s.sys, Output: s.events, Logger: s.log,
		HistoryViews: true, LiveViews: liveCalls{store: s.store}, ViewOutput: liveViewOutput{s.events},
		Choices: historyChoices{}, Now: s.sys.Engine().Clock, Incarnations: &incarnations{store: s.store}}); err != nil {
		return fmt.Errorf("server: building the callback receiver: %w", err)
	}

	for _, m := range s.services {
		if err := m.svc.Start(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("server: starting tool server %s: %w", m.name, err)
		}
	}
	if err := s.sys.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("server: starting the embedded system: %w", err)
	}
	if err := s.recoverDurable(ctx); err != nil {
		return err
	}
	s.httpSrv = &http.Server{Handler: s.requireToken(s.routes()), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: s.set.readTimeout, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.wg.Add(1)
	go func() { // owned by Stop, which shuts the HTTP server down and waits
		defer s.wg.Done()
		if err := s.httpSrv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("HTTP serving failed", "error", err)
			s.serveErr <- fmt.Errorf("server: serving HTTP: %w", err)
		}
	}()
	if !s.cfg.Freeze.Disabled {
		s.wg.Add(1)
		go s.freezeLoop() // owned by Stop (closes stopping, waits)
	}
	s.startBackfill()
	s.checkMCP(ctx)
	if err := s.logToolsets(ctx); err != nil {
		return err
	}
	s.log.Info("agentslice serve: ready", "url", s.url, "listen", s.ln.Addr().String(), "model", s.set.model.Name,
		"provider", string(s.set.model.Provider), "tool_servers", len(servers))
	if len(s.unavailableToolsets()) > 0 {
		s.wg.Add(1)
		go s.recheckToolsets() // owned by Stop (closes stopping, waits)
	}
	return nil
}

// incarnations reads a thread's incarnation from the store, so the
// receiver refuses callback URLs issued to an earlier thread of the same
// ID (a data directory wiped, a memory store restarted) with 403.
// incarnations tells the callback receiver a thread's incarnation. It is
// fixed when the thread is created, and serve deletes no thread (starting
// over is a new data directory, so a new process), so a known incarnation
// is remembered: a tool streaming output posts a callback per chunk, and
// each would otherwise load the thread's whole history. A thread not yet
// created (no incarnation) is asked again next time.
type incarnations struct {
	store runtime.HistoryStore
	mu    sync.Mutex
	known map[string]string
}

// maxKnownIncarnations bounds the memory of incarnations: past it the map
// starts over (the next callback of each thread loads it once more).
const maxKnownIncarnations = 100_000

func (i *incarnations) Incarnation(ctx context.Context, threadID string) (string, error) {
	i.mu.Lock()
	inc, ok := i.known[threadID]
	i.mu.Unlock()
	if ok {
		return inc, nil
	}
	th, err := i.store.Load(ctx, threadID)
	if err != nil {
		return "", err
	}
	if inc = th.State.Incarnation; inc != "" {
		i.mu.Lock()
		if i.known == nil || len(i.known) >= maxKnownIncarnations {
			i.known = make(map[string]string)
		}
		i.known[threadID] = inc
		i.mu.Unlock()
	}
	return inc, nil
}

// buildServices builds the in-process tool servers (example tools, the
// sandbox, MCP proxies); Start starts them.
func (s *Server) buildServices(retry rap.RetryPolicy) error {
	if e := s.cfg.ExampleTools; e != nil && (e.GetTime || e.RunCommand != nil) {
		var list []rap.Tool
		if e.GetTime {
			list = append(list, tools.GetTime(nil))
		}
		if rc := e.RunCommand; rc != nil {
			list = append(list, tools.RunCommand(tools.RunCommandConfig{Allowed: rc.Allow, Dir: rc.Dir, Timeout: s.set.commandTimeout,
				Env: procenv.Build(os.Environ(), s.cfg.PassEnv, nil)}))
		}
		kit, err := rap.NewServer(rap.ServerConfig{Name: "examples", Description: "agentslice example tools",
			Tools: list, PublicURL: s.url + ToolsPrefix + "examples", Client: s.client, Retry: retry, Logger: s.log})
		if err != nil {
			return fmt.Errorf("server: building the example tools: %w", err)
		}
		s.services = append(s.services, mounted{"examples", kit})
	}
	if err := s.buildSandbox(retry); err != nil {
		return err
	}
	for _, m := range s.cfg.MCPServers {
		name := "mcp/" + m.Name
		p, err := mcp.New(mcp.Config{Name: m.Name, Description: "MCP server " + m.Name, Command: m.Command, Env: procenv.Build(os.Environ(), s.cfg.PassEnv, m.Env), Dir: m.Dir,
			URL: m.URL, PublicURL: s.url + ToolsPrefix + name, Client: s.client, Retry: retry, Logger: s.log, MetaTools: m.MetaTools})
		if err != nil {
			return fmt.Errorf("server: building the MCP proxy %s: %w", m.Name, err)
		}
		s.services = append(s.services, mounted{name, p})
		s.proxies = append(s.proxies, p)
	}
	return nil
}

// checkMCP connects to every MCP server at start, concurrently, and reports
// one that cannot start (naming its config entry, with the last lines of its
// stderr); serve goes on without it: its toolset is answered 503 and
// fetched again with backoff, so its tools are offered once it starts.
func (s *Server) checkMCP(ctx context.Context) {
	var wg sync.WaitGroup
	for i, p := range s.proxies {
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := p.Check(cctx); err != nil {
				s.log.Error("MCP server cannot start; its tools are not offered until it can", "config", fmt.Sprintf("mcp_servers[%d]", i),
					"name", s.cfg.MCPServers[i].Name, "error", err)
			}
		}()
	}
	wg.Wait()
}

// logToolsets fetches every toolset once and logs what agents will be
// offered, and why a server was left out. It fails when an agent allows a
// toolset no server announced although every server answered (a typo);
// when a server could not be loaded, serve starts without its toolsets
// and reports them (see toolsets.go).
func (s *Server) logToolsets(ctx context.Context) error {
	set := s.loader.Load(ctx)
	if len(set.Problems()) == 0 {
		if err := checkRemoteToolsets(s.set.remoteToolsets, set, nil); err != nil {
			return err
		}
	}
	s.noteUnavailable(set)
	names := make([]string, 0, len(set.Specs()))
	for _, sp := range set.Specs() {
		names = append(names, sp.Name)
	}
	s.log.Info("tools offered to agents", "tools", strings.Join(names, ","))
	for _, p := range set.Problems() {
		s.log.Warn("tool server left out", "problem", p.Error())
	}
	if s.agents != nil {
		s.log.Info("agents defined", "agents", strings.Join(s.agents.Names(), ","), "default", s.agents.Default())
	}
	return nil
}

// freezeLoop compresses idle threads' history now and then.
func (s *Server) freezeLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.set.freezeEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stopping:
			return
		case <-t.C:
			s.freezeOnce()
		}
	}
}

func (s *Server) freezeOnce() int {
	n := s.store.FreezeIdle(s.set.freezeIdle)
	if n > 0 {
		s.log.Debug("froze idle threads", "threads", n)
	}
	return n
}

// Stop shuts down in order: event streams and HTTP, the system (running
// slices are cancelled), the timers, the tool servers, the dispatcher. It
// waits for every goroutine the server started and is safe to call twice.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		close(s.stopping)
		if s.events != nil {
			s.events.Close()
		}
		if s.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := s.httpSrv.Shutdown(ctx); err != nil {
				s.log.Warn("HTTP shutdown did not finish in time; closing connections", "error", err)
				_ = s.httpSrv.Close()
			}
			cancel()
		} else if s.ln != nil {
			_ = s.ln.Close()
		}
		s.wg.Wait()
		if s.sys != nil {
			s.sys.Stop()
		}
		if s.timers != nil {
			s.timers.Stop()
		}
		for _, m := range s.services {
			m.svc.Stop()
		}
		s.closeStore()
		if s.disp != nil {
			s.disp.Close()
		}
		if s.client != nil {
			s.client.CloseIdleConnections()
		}
		if s.started {
			s.log.Info("agentslice serve: stopped")
		}
	})
}

// reachable turns a listener address into one a client on this machine
// can dial: an unspecified host (0.0.0.0, ::) becomes 127.0.0.1.
func reachable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
