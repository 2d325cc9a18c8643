package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// DefaultAddr is the address the broker listens on when Config.Addr is
// empty: Kafka's usual port, on loopback only.
const DefaultAddr = "127.0.0.1:9092"

// ClusterID is the cluster ID the broker reports in metadata responses. A
// data directory created by an earlier run keeps the ID it was created with.
const ClusterID = "sqlstreams-embedded"

// GroupMinSessionTimeout is the smallest consumer-group session timeout the
// broker accepts (Kafka's default is 6 s). It is low so that tests which
// kill group members can let their sessions expire quickly; clients still
// choose their own timeout (franz-go's default is 45 s).
const GroupMinSessionTimeout = time.Second

// checkpointInterval is how often a running broker rewrites the repair
// checkpoint from the partitions' last stable offsets.
const checkpointInterval = 30 * time.Second

// Config configures [Start]. The zero value is a usable in-memory broker on
// [DefaultAddr].
type Config struct {
	// Addr is the host:port to listen on, default [DefaultAddr]. Port 0
	// picks a free port; [Broker.Addr] reports it. The host is honoured
	// as given: "0.0.0.0:9092" or ":9092" listens on every interface.
	Addr string

	// Advertise is the host:port clients are told to connect to in
	// metadata responses, overriding the default of the listen address
	// (with the real port). A listen address on every interface has no
	// host clients could use, so it is advertised as this machine's host
	// name (as Kafka does), or 127.0.0.1 when the name does not resolve,
	// unless Advertise says otherwise; set it when clients on other
	// machines reach the broker by another name.
	Advertise string

	// TLS, when set, serves TLS on every connection to Addr (the SSL and
	// SASL_SSL security protocols). It needs a certificate in
	// Certificates; asking for client certificates (ClientAuth) is
	// possible but then [Broker.Profile]'s clients, which have none,
	// cannot connect. The broker's own clients connect in-process
	// and are not affected.
	TLS *tls.Config

	// Users, when not empty, turns SASL on: every connection must log in
	// as one of them with SCRAM-SHA-256 or SCRAM-SHA-512 (the
	// SASL_PLAINTEXT and SASL_SSL security protocols; PLAIN is not
	// offered). Each may do anything on the broker. The broker's own
	// clients log in as [InternalUser]. Users are these on every start:
	// credentials changed with AlterUserScramCredentials last until the
	// broker stops.
	Users []User

	// DataDir is the directory where topics, committed offsets, groups,
	// producer state and the repair checkpoint are persisted; it is
	// created if missing and reloaded on start. Empty keeps everything in
	// memory, and then there is nothing to repair.
	//
	// Writes reach the operating system before a producer is answered,
	// so they survive the process being killed; what survives the
	// machine losing power depends on Sync.
	DataDir string

	// Sync says when written records are forced to the disk, and so
	// what an acknowledged record survives; see [Sync]. Empty is
	// [SyncInterval]. Without a DataDir it has no effect.
	Sync Sync
	// SyncInterval is [SyncInterval]'s period; zero is
	// [DefaultSyncInterval].
	SyncInterval time.Duration

	// Logger receives the repair's report and kfake's own messages.
	// Nil uses slog.Default().
	Logger *slog.Logger

	// skipRepair disables the crash repair; tests use it to show the
	// defect the repair exists for.
	skipRepair bool
	// skipProducerState disables restoring producer state from the log
	// after a crash; tests use it to show the duplicates it prevents.
	skipProducerState bool
}

// Broker is a running embedded broker. Its methods are safe for concurrent
// use.
type Broker struct {
	cluster *kfake.Cluster
	ln      *gatedListener
	log     *slog.Logger
	dataDir string
	sec     *security

	// admin talks to the cluster over in-process pipes, so it works
	// whatever address the broker listens on or advertises.
	cl    *kgo.Client
	admin *kadm.Client

	// checkpoints is whether this broker keeps the repair checkpoint:
	// it has a DataDir and the repair ran.
	checkpoints bool
	// repair is what the repair at Start found and did.
	repair repairReport
	// journal records committing transactions (see journal.go).
	journal *journal
	// scan is what the start-up log scan found and did (logscan.go).
	logScan scanReport
	// storage refuses produces while the disk is unusable (storage.go).
	storage *storage
	started time.Time

	stop     context.CancelFunc
	loopDone chan struct{}
	syncDone chan struct{}
	// cleaner compacts and applies retention (cleaner.go).
	cleaner     *cleaner
	cleanerDone chan struct{}
	closeOnce   sync.Once
}

// Start starts the broker and returns once it serves clients. With a
// DataDir it first reloads the persisted state and repairs transactions a
// crash left open (see the package documentation); outside connections
// made meanwhile wait and are served when Start returns. ctx bounds Start
// only, not the broker's lifetime: stop the broker with [Broker.Close].
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("broker: listen address %q: %w", addr, err)
	}
	if cfg.Advertise != "" {
		if _, port, err := net.SplitHostPort(cfg.Advertise); err != nil || port == "" {
			return nil, fmt.Errorf("broker: advertised address %q: want host:port", cfg.Advertise)
		}
	}

	mode, err := ParseSync(string(cfg.Sync))
	if err != nil {
		return nil, err
	}
	interval := cfg.SyncInterval
	if interval <= 0 {
		interval = DefaultSyncInterval
	}
	sec, secOpts, err := newSecurity(cfg)
	if err != nil {
		return nil, err
	}
	var st *storage
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("broker: data directory: %w", err)
		}
		st = newStorage(cfg.DataDir, log)
		if err := removeSASLFile(cfg.DataDir); err != nil {
			return nil, fmt.Errorf("broker: removing the last run's SASL users: %w", err)
		}
	}

	// kfake's own listener hard-codes 127.0.0.1; ours honours the host
	// and holds outside connections back until the repair is done. TLS
	// is ours too (not kfake.TLS, which would also wrap the in-process
	// connections of the broker's own clients).
	var ln *gatedListener
	listen := func(network, _ string) (net.Listener, error) {
		l, err := net.Listen(network, addr)
		if err != nil {
			return nil, err
		}
		ln = newGatedListener(l, advertised(l.Addr(), cfg.Advertise, log), log)
		ln.wrap = sec.wrap
		return ln, nil
	}

	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(listen),
		kfake.ClusterID(ClusterID),
		kfake.WithLogger(kfakeLogger{l: log, st: st}),
		kfake.GroupMinSessionTimeout(GroupMinSessionTimeout),
		// Kafka's num.partitions default; kfake's is 10. Auto topic
		// creation stays off (kfake's default): sqlstreams creates
		// its topics with explicit partition counts.
		kfake.DefaultNumPartitions(1),
		kfake.BrokerConfigs(map[string]string{
			// Reported by DescribeConfigs; kfake's default
			// says 3 although one node holds one replica.
			"default.replication.factor": "1",
			// The broker runs kfake's cleaner itself, only when
			// no transaction is open where it cleans (cleaner.go).
			"log.cleaner.backoff.ms": strconv.Itoa(kfakeCleanerOff),
			// Records are kept until a topic's own retention.ms
			// says otherwise. kfake applies the broker default
			// (Kafka's, 7 days) to every topic, compacted ones
			// included, and to a partition's last batch too, so a
			// replay of records a week old (the Nexmark
			// generator's 2024 event times) emptied input, output
			// and changelog topics at the first cleaner round.
			// Kafka applies it to cleanup.policy=delete topics only,
			// and never to the active segment (1 GiB): a
			// laptop's topics mostly never leave it.
			"log.retention.ms": "-1",
		}),
	}
	opts = append(opts, secOpts...)
	var scan *scanReport
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
		if mode == SyncAlways {
			opts = append(opts, kfake.SyncWrites())
		}
		journal, err := readJournal(cfg.DataDir)
		if err != nil {
			return nil, fmt.Errorf("broker: reading the commit journal in %s: %w", cfg.DataDir, err)
		}
		if scan, err = scanDataDir(cfg.DataDir, !cfg.skipProducerState, journal, log); err != nil {
			return nil, fmt.Errorf("broker: reading the log in %s: %w", cfg.DataDir, err)
		}
		log.Info("broker: log scan done", "clean_shutdown", scan.Clean, "segments", scan.Segments,
			"batches", scan.Batches, "cut", len(scan.Cut), "producer_windows_restored", scan.Producers,
			"commits_completed", scan.Completed, "index_entries_written", scan.IndexEntries, "elapsed", scan.Elapsed)
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("broker: starting kfake on %s: %w", addr, err)
	}

	if st != nil {
		st.install(cluster)
	}
	if sec.internal != nil {
		protectInternalUser(cluster)
	}
	b := &Broker{
		sec:      sec,
		storage:  st,
		cluster:  cluster,
		ln:       ln,
		log:      log,
		dataDir:  cfg.DataDir,
		loopDone: make(chan struct{}),
		started:  time.Now(),
	}
	if scan != nil {
		b.logScan = *scan
	}
	b.cl, err = b.newInternalClient()
	if err != nil {
		cluster.Close()
		return nil, fmt.Errorf("broker: internal client: %w", err)
	}
	b.admin = kadm.NewClient(b.cl)
	b.cleaner = &cleaner{dataDir: cfg.DataDir, cluster: cluster, cl: b.cl, admin: b.admin, log: log}
	b.cleaner.install()

	b.checkpoints = cfg.DataDir != "" && !cfg.skipRepair
	if b.checkpoints {
		entries, err := readJournal(cfg.DataDir)
		if err == nil {
			err = b.repairCrashedTxns(ctx, entries)
		}
		if err == nil {
			// Everything journaled is settled: start a new journal.
			b.journal, err = openJournal(cfg.DataDir)
		}
		if err != nil {
			b.cl.Close()
			cluster.Close()
			return nil, fmt.Errorf("broker: repairing transactions left open by a crash in %s: %w", cfg.DataDir, err)
		}
		b.journal.watch(cluster)
	}
	// Stable offsets per partition, as Kafka answers them (stable.go).
	stable := newStableOffsets()
	if err := stable.restore(ctx, b.admin); err != nil {
		b.cl.Close()
		cluster.Close()
		return nil, fmt.Errorf("broker: listing open transactions: %w", err)
	}
	stable.watch(cluster)

	ln.open()
	loopCtx, stop := context.WithCancel(context.Background())
	b.stop = stop
	b.cleanerDone = make(chan struct{})
	go func() {
		defer close(b.cleanerDone)
		b.cleaner.loop(loopCtx)
	}()
	b.syncDone = make(chan struct{})
	if cfg.DataDir != "" && mode == SyncInterval {
		go func() {
			defer close(b.syncDone)
			syncLoop(loopCtx, cfg.DataDir, interval, log)
		}()
	} else {
		close(b.syncDone)
	}
	if b.checkpoints {
		go b.checkpointLoop(loopCtx)
	} else {
		close(b.loopDone)
	}
	log.Info("embedded broker started", "listen", ln.tcp.Addr().String(), "advertised", b.Addr(), "security_protocol", sec.protocol(),
		"data_dir", cfg.DataDir, "fsync", mode)
	return b, nil
}

// newInternalClient builds one of the broker's own clients: every
// connection is an in-process pipe, whatever the metadata advertises.
func (b *Broker) newInternalClient(extra ...kgo.Opt) (*kgo.Client, error) {
	p := kafka.Plain(b.Addr()).WithDialer(b.ln.dialInternal)
	p.SASL = b.sec.internal
	return p.NewClient(append([]kgo.Opt{
		kgo.ClientID("sqlstreams-broker"),
		kgo.RetryTimeout(30 * time.Second),
		// kadm answers from cached metadata this young; the
		// checkpoint on Close must see topics created just before.
		kgo.MetadataMinAge(10 * time.Millisecond),
	}, extra...)...)
}

// Addr returns the address clients should bootstrap from: the advertised
// address, which is the real listen address (with the real port when
// Config.Addr asked for port 0) unless Config.Advertise overrides it.
func (b *Broker) Addr() string {
	return b.ln.Addr().String()
}

// Profile returns p pointed at this broker, for clients in this process
// (the server's engine and schema registry): its brokers are [Broker.Addr],
// its connections go to the listener on this machine whatever address the
// broker advertises, and with TLS or SASL on it carries the broker's own
// credentials: TLS that trusts exactly the broker's certificate, and the
// internal superuser's SCRAM-SHA-512 login. p's TLS and SASL are replaced;
// its other settings are kept. The credentials are valid until the broker
// stops; keep the profile inside the process.
func (b *Broker) Profile(p kafka.Profile) kafka.Profile {
	p.Brokers = []string{b.Addr()}
	p.TLS = b.sec.clientTLS
	p.SASL = b.sec.internal
	p.Principal = ""
	if b.sec.internal != nil {
		p.Principal = "User:" + InternalUser
	}
	local := localAddr(b.ln.tcp.Addr())
	var d net.Dialer
	return p.WithDialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, local)
	})
}

// ListenAddr is the address the broker listens on (with the real port),
// which may differ from the advertised [Broker.Addr].
func (b *Broker) ListenAddr() net.Addr {
	return b.ln.tcp.Addr()
}

// localAddr is where a client on this machine reaches a listener on addr:
// addr itself, or loopback for a listener on every interface.
func localAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	// A wildcard listener of network "tcp" is dual-stack: IPv4
	// loopback reaches it.
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

// Cluster returns the underlying kfake cluster, for tests that inject
// faults (ControlKey, KeepControl, ...). Closing it directly skips the
// final repair checkpoint; use [Broker.Close].
func (b *Broker) Cluster() *kfake.Cluster {
	return b.cluster
}

// Close shuts the broker down cleanly: it writes the repair checkpoint,
// closes every connection and, with a DataDir, persists the cluster's state
// (kfake saves on close). Close is idempotent; a closed broker cannot be
// restarted, call [Start] again on the same DataDir instead.
func (b *Broker) Close() {
	b.closeOnce.Do(func() {
		b.stop()
		<-b.loopDone
		<-b.syncDone
		<-b.cleanerDone
		if b.checkpoints {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := b.writeLiveCheckpoint(ctx); err != nil {
				b.log.Warn("broker: final repair checkpoint not written; the next start reads more of the log", "err", err)
			}
			cancel()
		}
		b.cl.Close()
		b.cluster.Close()
		if b.journal != nil {
			b.journal.close()
		}
		if b.storage != nil {
			b.storage.close()
		}
		if b.dataDir != "" {
			b.markClean()
			if err := removeSASLFile(b.dataDir); err != nil {
				b.log.Warn("broker: kfake's SASL users file not removed", "err", err)
			}
		}
		b.log.Info("embedded broker stopped", "addr", b.Addr())
	})
}

// markClean writes the clean-shutdown marker if kfake saved its producer
// state during this Close (it logs, not returns, a failed save).
func (b *Broker) markClean() {
	st, err := os.Stat(filepath.Join(b.dataDir, kfakeSeqWindowsFile))
	if err != nil || st.ModTime().Before(b.started) {
		b.log.Warn("broker: kfake did not save its producer state on close; the next start rebuilds it from the log", "err", err)
		return
	}
	if err := writeCleanMarker(b.dataDir); err != nil {
		b.log.Warn("broker: clean-shutdown marker not written; the next start rebuilds producer state from the log", "err", err)
	}
}

// advertised returns the address to report to clients for a listener on
// real: override if set, otherwise real with an unspecified (every
// interface) host replaced by the host name, or by loopback when the name
// does not resolve.
func advertised(real net.Addr, override string, log *slog.Logger) net.Addr {
	if override != "" {
		return hostPortAddr(override)
	}
	tcp, ok := real.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return real
	}
	port := strconv.Itoa(tcp.Port)
	host, err := os.Hostname()
	var ips []net.IP
	if err == nil {
		ips, err = net.LookupIP(host)
	}
	if err != nil || len(ips) == 0 {
		log.Warn("broker: listening on every interface, but the host name does not resolve: advertising 127.0.0.1, which only clients on this machine can use; set the advertised address",
			"listen", real.String(), "host", host, "err", err)
		return hostPortAddr(net.JoinHostPort("127.0.0.1", port))
	}
	remote := false
	for _, ip := range ips {
		remote = remote || !ip.IsLoopback()
	}
	if !remote {
		log.Warn("broker: listening on every interface, but the advertised host name resolves to loopback here; clients on other machines need it to resolve to this one, or set the advertised address",
			"listen", real.String(), "advertised", net.JoinHostPort(host, port))
	}
	return hostPortAddr(net.JoinHostPort(host, port))
}

// hostPortAddr is a net.Addr that is just a host:port string.
type hostPortAddr string

func (hostPortAddr) Network() string  { return "tcp" }
func (a hostPortAddr) String() string { return string(a) }

// kfakeLogger forwards kfake's log lines to slog at the matching level.
// A failed write also tells st to refuse produces (storage.go).
type kfakeLogger struct {
	l  *slog.Logger
	st *storage
}

func (k kfakeLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	var sl slog.Level
	switch level {
	case kfake.LogLevelError:
		sl = slog.LevelError
	case kfake.LogLevelWarn:
		sl = slog.LevelWarn
	case kfake.LogLevelInfo:
		sl = slog.LevelInfo
	case kfake.LogLevelDebug:
		sl = slog.LevelDebug
	default:
		return
	}
	ctx := context.Background()
	if k.st != nil && sl >= slog.LevelWarn {
		if msg := fmt.Sprintf(format, args...); isWriteFailure(msg) {
			k.st.failed(msg)
		}
	}
	if !k.l.Enabled(ctx, sl) {
		return
	}
	k.l.Log(ctx, sl, fmt.Sprintf(format, args...), "component", "kfake")
}

// errClosed is returned by the internal dialer once the broker is closed.
var errClosed = errors.New("broker: closed")

// compactNow runs a log cleaner round now (tests); it reports whether it
// cleaned.
func (b *Broker) compactNow(ctx context.Context) (bool, error) {
	return b.cleaner.round(ctx, true)
}
