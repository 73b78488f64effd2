//! The wasmtime side: the compiled and version-checked component
//! ([`Pruner`]), the host's side of the component's one import
//! (`scorer.score`, answered from the per-call [`CallScoring`] in the
//! store's [`HostState`]), per-call resource limits, and live instances
//! ([`Instance`]) kept in a small pool.
//!
//! SPEC §14: the host owns the instance's life (dropped after a trap) and
//! its resource limits; the numbers come from the guest
//! (`settings.call-limits-for`), everything else is the guest's too.
//!
//! **Instances.** Each call that enters the guest takes an instance of its
//! own from the pool ([`Pruner::checkout`]) and gives it back when the call
//! succeeded ([`Pruner::checkin`]); after any trap or limit it is dropped,
//! never entered again. So several results of one conversation can be in
//! flight at once (threads), each inside its own `pruner.prune` waiting on
//! its scorer, with no lock held across a scorer call. At most
//! [`MAX_IDLE_INSTANCES`] idle instances are kept.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context as _};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap};

use crate::cache::{self, CacheDir};
use crate::cancel::CancelToken;
use crate::scorer::{run_host_scorer, Scorer, Scoring};
use crate::types::{
    BatchAnswer, CallLimits, Config as GuestConfig, Dialect, Failure, FailureReason, Inspection, Lang, Limit, Operation,
    RetryFacts, ScoringRequest, ScoringResponse,
};

use crate::wit::{Toolprune, ToolprunePre};

/// The contract versions this host speaks: `0.3.x` (WIT package `toolprune:pruner`).
pub const CONTRACT: &str = "0.3";

/// Idle instances a [`Pruner`] keeps for the next calls (more in flight at
/// once are made as needed and dropped when they come back to a full pool).
pub const MAX_IDLE_INSTANCES: usize = 4;

/// Fuel and memory for the small calls made before the per-call limits are
/// known (`settings.call-limits-for` itself, `version`): generous for them,
/// still bounded so that no call can run forever.
const BOOTSTRAP_FUEL: u64 = 1_000_000_000;

/// Replaces some of the guest's per-call limits (`settings.call-limits-for`)
/// for every call: for tests that drive the fail-open path (SPEC §11).
/// `None` keeps the guest's number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitsOverride {
    /// wasmtime fuel per call (≈ one unit per wasm instruction).
    pub fuel: Option<u64>,
    /// Wall time per call in ms. **Not enforced by this host** (fuel is its
    /// guard against a looping guest); kept so that scenario options map 1:1.
    pub wall_ms: Option<u32>,
    /// Linear memory of an instance, in bytes.
    pub memory_bytes: Option<u64>,
    /// The guest's work budget of every result, in its work units
    /// (`prune-input.work-budget`, SPEC §7: the deterministic budget that
    /// decides, the same in every host; past it the outcome is `failed` and
    /// the line says `reason=budget`). `None`: the guest's own, sized from the text.
    pub work: Option<u64>,
}

impl LimitsOverride {
    pub(crate) fn apply(&self, limits: CallLimits) -> CallLimits {
        CallLimits {
            fuel: self.fuel.unwrap_or(limits.fuel),
            wall_ms: self.wall_ms.unwrap_or(limits.wall_ms),
            memory_bytes: self.memory_bytes.unwrap_or(limits.memory_bytes),
        }
    }
}

/// How to load the component ([`Pruner::load`]).
#[derive(Clone, Default)]
pub struct LoadOptions {
    /// The default scorer of conversations (default [`Scoring::Offline`]).
    pub scoring: Scoring,
    /// Per-call limits replacing the guest's (tests).
    pub limits: LimitsOverride,
    /// The component's bytes; default: the one built by `toolprune-artifacts`.
    pub component: Option<Arc<[u8]>>,
    /// Where the compiled component is kept between processes (default:
    /// `$TOOLPRUNE_CACHE_DIR`, else `$XDG_CACHE_HOME/toolprune`, else
    /// `~/.cache/toolprune`).
    pub cache: CacheDir,
}

/// Why the host gave no guest answer (SPEC §11): the raw text goes back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostFailure {
    /// `guest_trap`, or `store` when the conversation's store failed (Rust
    /// strings are always valid UTF-8, so this host never reports
    /// `invalid_text` / `invalid_input`).
    pub reason: FailureReason,
    /// Which limit stopped the call, when one did (`fuel`, `memory`).
    pub limit: Option<Limit>,
    /// wasmtime's message, for diagnosis. Carries no document text.
    pub message: String,
}

impl HostFailure {
    pub(crate) fn trap(err: &wasmtime::Error, memory_refused: bool) -> Self {
        let trap = err.downcast_ref::<Trap>().copied();
        let limit = if trap == Some(Trap::OutOfFuel) {
            Some(Limit::Fuel)
        } else if memory_refused {
            Some(Limit::Memory)
        } else {
            None
        };
        HostFailure { reason: FailureReason::GuestTrap, limit, message: format!("{err:#}") }
    }

    /// The conversation's store could not give an id, keep or read a record
    /// (reason `store`): the text goes unchanged.
    pub(crate) fn store(error: &crate::store::StoreError) -> Self {
        HostFailure { reason: FailureReason::Store, limit: None, message: format!("store: {error}") }
    }

    /// `guest_trap` (the SPEC name of [`HostFailure::reason`]).
    pub fn reason_name(&self) -> String {
        crate::types::wit_name(&self.reason)
    }
}

impl std::fmt::Display for HostFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason_name(), self.message)
    }
}

impl std::error::Error for HostFailure {}

/// Per-store data: the memory limiter, and the scoring context of the call
/// in progress (none between calls).
pub(crate) struct HostState {
    limits: Limiter,
    scoring: Option<CallScoring>,
}

/// What the `scorer.score` import needs during one call of `pruner.prune`
/// or `judge.decide`, and what it saw: set on the instance's store before
/// the call ([`Instance::set_scoring`]), taken back after it
/// ([`Instance::take_scoring`]).
pub(crate) struct CallScoring {
    /// The host's scorer; none (the guest's own scorers, or a judge without
    /// a scorer): an import call answers every batch `failed(network)`.
    pub scorer: Option<Arc<dyn Scorer>>,
    /// The turn's cancellation (SPEC §11: answered `err(cancelled)`).
    pub cancel: CancelToken,
    /// **Test-only** deadline cap (see `ConversationOptions::deadline_cap`).
    pub deadline_cap: Option<Duration>,
    /// Asks `settings.retry-delay` — of another instance: the one inside
    /// `prune` cannot be entered again while it waits for the import.
    pub pruner: Pruner,
    /// Import calls made during the call (the guest promises at most one).
    pub calls: u32,
    /// The last response the import gave the guest, kept so that the same
    /// result can be finished again through a `prune-job` without a second
    /// scorer call (ids renumbered under concurrency, `conversation`).
    pub response: Option<ScoringResponse>,
}

impl CallScoring {
    pub(crate) fn new(pruner: &Pruner, scorer: Option<Arc<dyn Scorer>>, cancel: CancelToken, deadline_cap: Option<Duration>) -> Self {
        CallScoring { scorer, cancel, deadline_cap, pruner: pruner.clone(), calls: 0, response: None }
    }
}

/// Every batch `failed(network)`: the answer when no host scorer is there.
fn all_failed(request: &ScoringRequest) -> ScoringResponse {
    ScoringResponse { answers: Ok(request.batches.iter().map(|_| BatchAnswer::Failed(Failure::Network)).collect()), elapsed_ms: 0 }
}

/// The component's only import (`wit/scorer.wit`, SPEC §14): runs the
/// call's scorer on its own thread under the deadline and the turn's
/// cancellation, asking `settings.retry-delay` of another instance. Never
/// traps: an error, a panic, the deadline and cancellation are answers
/// (`failed(network)` per batch, `err(timeout)`, `err(cancelled)`), so the
/// outcome and log line are those of the job form.
impl crate::wit::toolprune::pruner::scorer::Host for HostState {
    fn score(&mut self, request: ScoringRequest) -> ScoringResponse {
        let Some(call) = self.scoring.as_mut() else {
            // Entered outside a prune or decide call (a guest bug): no scorer here.
            return all_failed(&request);
        };
        call.calls += 1;
        let response = match &call.scorer {
            Some(scorer) => {
                let pruner = call.pruner.clone();
                let mut retry = |facts: RetryFacts| pruner.retry_delay(facts);
                run_host_scorer(scorer, request, &call.cancel, call.deadline_cap, &mut retry)
            }
            None => all_failed(&request),
        };
        call.response = Some(response.clone());
        response
    }
}

/// wasmtime's [`StoreLimits`] with a bound that can change between calls,
/// remembering whether it refused a memory growth (so a trap can be told
/// apart from the memory limit).
struct Limiter {
    limits: StoreLimits,
    memory_refused: bool,
}

impl Limiter {
    fn new(memory_bytes: u64) -> Self {
        Limiter {
            limits: StoreLimitsBuilder::new()
                .memory_size(usize::try_from(memory_bytes).unwrap_or(usize::MAX))
                .trap_on_grow_failure(true)
                .build(),
            memory_refused: false,
        }
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum);
        if !matches!(allowed, Ok(true)) {
            self.memory_refused = true;
        }
        allowed
    }
    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }
    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }
    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }
    fn instances(&self) -> usize {
        self.limits.instances()
    }
    fn tables(&self) -> usize {
        self.limits.tables()
    }
    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

struct PrunerInner {
    engine: Engine,
    pre: ToolprunePre<HostState>,
    scoring: Scoring,
    limits: LimitsOverride,
    version: String,
    /// A spare instance for the pure calls (`settings.*`, `inspect`, …).
    utility: Mutex<Option<Instance>>,
    /// Idle instances for the calls that may wait on a scorer (`prune`,
    /// jobs, `decide`) and `omitted`: one per call in flight.
    pool: Mutex<Vec<Instance>>,
}

/// The toolprune component, compiled (or read from the disk cache),
/// version-checked and ready to instantiate.
///
/// Cheap to clone (reference-counted). Make one per process
/// ([`Pruner::shared`] for the built-in component with default options),
/// then one [`crate::Conversation`] per agent conversation.
#[derive(Clone)]
pub struct Pruner {
    inner: Arc<PrunerInner>,
}

impl std::fmt::Debug for Pruner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pruner").field("version", &self.inner.version).finish_non_exhaustive()
    }
}

/// The most of a configuration file a host reads (bytes): one byte more
/// than the guest's rule (`settings.resolve` refuses anything over 1 MiB,
/// `guest/src/limits.rs`), as the Node and Python hosts read it, so a
/// larger file gets the guest's size refusal in every host and a huge file
/// or `/dev/zero` is never read whole.
const CONFIG_READ_CAP: u64 = (1 << 20) + 1;

/// A configuration file's text: none when it does not exist; an error for
/// anything that is not a regular file (a FIFO would block the reader, a
/// device never end), for a read error, and for text that is not UTF-8.
/// At most [`CONFIG_READ_CAP`] bytes are read.
fn read_config_file(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read as _;
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if !meta.is_file() {
        return Err("not a regular file".to_string());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(CONFIG_READ_CAP).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 >= CONFIG_READ_CAP {
        // Cut short, perhaps inside a character: the guest refuses it for its size anyway.
        return Ok(Some(String::from_utf8_lossy(&bytes).into_owned()));
    }
    String::from_utf8(bytes).map(Some).map_err(|_| "stream did not contain valid UTF-8".to_string())
}

/// The engine every [`Pruner`] uses: fuel metering on (the cache key
/// includes this configuration through wasmtime's compatibility hash).
fn engine() -> anyhow::Result<Engine> {
    let mut config = Config::new();
    config.consume_fuel(true);
    Engine::new(&config).map_err(anyhow::Error::from).context("wasmtime engine")
}

/// Checks, before instantiating, that every `toolprune:pruner/*` export of
/// `component` carries contract version 0.3.x (WIT rule 8 of the host
/// design). Errors: `toolprune: this component implements contract X, this
/// host needs 0.3.x (rebuild or reinstall toolprune)`.
pub fn check_version(engine: &Engine, component: &Component) -> anyhow::Result<()> {
    let ty = component.component_type();
    let mut found = Vec::new();
    for (name, _) in ty.exports(engine) {
        if let Some(rest) = name.strip_prefix("toolprune:pruner/") {
            let version = rest.split_once('@').map_or("none", |(_, v)| v);
            found.push(version.to_string());
        }
    }
    if found.is_empty() {
        bail!(
            "toolprune: this component implements contract none (no toolprune:pruner exports), this host needs {CONTRACT}.x (rebuild or reinstall toolprune)"
        );
    }
    let needed = format!("{CONTRACT}.");
    if let Some(other) = found.iter().find(|v| !v.starts_with(&needed)) {
        bail!(
            "toolprune: this component implements contract {other}, this host needs {CONTRACT}.x (rebuild or reinstall toolprune)"
        );
    }
    Ok(())
}

impl Pruner {
    /// Loads the component: from the disk cache when a valid entry exists,
    /// else compiled (and cached); then checks its contract version and
    /// links it: its one import, `scorer.score`, is this host's
    /// (`wit/scorer.wit`).
    ///
    /// Errors: the bytes are not a component, its exports carry another
    /// contract version (the message names both), or it cannot be linked.
    pub fn load(options: LoadOptions) -> anyhow::Result<Self> {
        let engine = engine()?;
        let bytes: Arc<[u8]> = match &options.component {
            Some(bytes) => bytes.clone(),
            None => Arc::from(toolprune_artifacts::component()),
        };
        let component = cache::load_component(&engine, &bytes, &options.cache)?;
        check_version(&engine, &component)?;
        let mut linker = Linker::<HostState>::new(&engine);
        Toolprune::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |state| state)
            .map_err(anyhow::Error::from)
            .context("defining the scorer import")?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(ToolprunePre::new)
            .map_err(anyhow::Error::from)
            .context("linking the toolprune component")?;
        let mut pruner = Pruner {
            inner: Arc::new(PrunerInner {
                engine,
                pre,
                scoring: options.scoring,
                limits: options.limits,
                version: String::new(),
                utility: Mutex::new(None),
                pool: Mutex::new(Vec::new()),
            }),
        };
        let version = pruner
            .with_utility(|guest, store| guest.toolprune_pruner_settings().call_version(store))
            .map_err(|f| anyhow::anyhow!("the component failed: {f}"))?;
        Arc::get_mut(&mut pruner.inner).expect("not shared yet").version = version;
        Ok(pruner)
    }

    /// [`Pruner::load`] with default options, from a component file.
    pub fn from_file(path: impl Into<PathBuf>) -> anyhow::Result<Self> {
        let path = path.into();
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        Self::load(LoadOptions { component: Some(Arc::from(bytes)), ..LoadOptions::default() })
    }

    /// The process-wide [`Pruner::load`] with default options, loaded on
    /// first use. A failure is remembered and reported on every call.
    pub fn shared() -> anyhow::Result<&'static Pruner> {
        static SHARED: OnceLock<Result<Pruner, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| Pruner::load(LoadOptions::default()).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// The component's contract version (`settings.version`, e.g. `0.3.0`).
    pub fn version(&self) -> &str {
        &self.inner.version
    }

    /// The wasmtime engine (fuel metering on).
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The default scorer of new conversations.
    pub fn default_scoring(&self) -> &Scoring {
        &self.inner.scoring
    }

    /// The per-call limits override given at load.
    pub fn limits_override(&self) -> LimitsOverride {
        self.inner.limits
    }

    /// A fresh store and instance (no code runs in it yet).
    pub(crate) fn instantiate(&self) -> Result<Instance, HostFailure> {
        let mut store = Store::new(&self.inner.engine, HostState { limits: Limiter::new(u64::MAX), scoring: None });
        store.limiter(|state| &mut state.limits as &mut dyn ResourceLimiter);
        let bindings = store
            .set_fuel(BOOTSTRAP_FUEL)
            .and_then(|()| self.inner.pre.instantiate(&mut store))
            .map_err(|e| HostFailure::trap(&e, false))?;
        Ok(Instance { store, bindings, limits: self.inner.limits })
    }

    /// An instance for one call: an idle one from the pool, else a fresh one.
    /// Give it back with [`Pruner::checkin`] only when every call on it
    /// succeeded (after a trap it is dropped).
    pub(crate) fn checkout(&self) -> Result<Instance, HostFailure> {
        let idle = self.inner.pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle {
            Some(instance) => Ok(instance),
            None => self.instantiate(),
        }
    }

    /// Returns an instance whose calls all succeeded to the pool (dropped
    /// when [`MAX_IDLE_INSTANCES`] are idle already).
    pub(crate) fn checkin(&self, mut instance: Instance) {
        instance.store.data_mut().scoring = None;
        let mut pool = self.inner.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < MAX_IDLE_INSTANCES {
            pool.push(instance);
        }
    }

    /// Runs `f` on the spare instance (made if needed, dropped after a failure).
    pub(crate) fn with_utility<R>(
        &self,
        f: impl FnOnce(&Toolprune, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, HostFailure> {
        let mut slot = self.inner.utility.lock().unwrap_or_else(|e| e.into_inner());
        let instance = match &mut *slot {
            Some(instance) => instance,
            None => slot.insert(self.instantiate()?),
        };
        let answer = instance.call_bootstrap(f);
        if answer.is_err() {
            *slot = None;
        }
        answer
    }

    /// Runs `f` on the spare instance with the limits for a text of `bytes` bytes.
    pub(crate) fn with_utility_sized<R>(
        &self,
        bytes: usize,
        f: impl FnOnce(&Toolprune, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, HostFailure> {
        let mut slot = self.inner.utility.lock().unwrap_or_else(|e| e.into_inner());
        let instance = match &mut *slot {
            Some(instance) => instance,
            None => slot.insert(self.instantiate()?),
        };
        let answer = instance.call_sized(bytes, f);
        if answer.is_err() {
            *slot = None;
        }
        answer
    }

    /// How pruning would split `text` (SPEC §14, `pruner.inspect`): shape,
    /// a wrapper's span, the units with their kind. Errors: a trap or limit.
    pub fn inspect(&self, text: &str) -> Result<Inspection, HostFailure> {
        self.with_utility_sized(text.len(), |g, s| g.toolprune_pruner_pruner().call_inspect(s, text))
    }

    /// Whether `tool`'s results may be pruned given the prunable `globs`
    /// (SPEC §2, §15): [`Pruner::is_tool_prunable`] with the one name.
    pub fn is_prunable(&self, tool: &str, globs: &[String]) -> bool {
        self.is_tool_prunable(&[tool], globs)
    }

    /// Whether one tool's results may be pruned given the prunable `globs`,
    /// from every name the caller knows for it (`read_file`,
    /// `mcp__fetch__read_file`, `mcp_fetch_read_file`, …): never when any
    /// name is a file reader, shell, editor or `omitted`, else when any name
    /// matches a glob (SPEC §2, §15; `settings.is-tool-prunable`). A failure
    /// answers `false`.
    pub fn is_tool_prunable<S: AsRef<str>>(&self, names: &[S], globs: &[String]) -> bool {
        let names: Vec<String> = names.iter().map(|n| n.as_ref().to_string()).collect();
        self.with_utility(|g, s| g.toolprune_pruner_settings().call_is_tool_prunable(s, &names, globs)).unwrap_or(false)
    }

    /// Checks a threshold written by a user (`"0.2"`, `"0.20"`): the value,
    /// or the guest's message naming the allowed ones (SPEC §6).
    pub fn threshold(&self, value: &str) -> Result<f64, String> {
        self.with_utility(|g, s| g.toolprune_pruner_settings().call_threshold(s, value))
            .map_err(|f| f.to_string())?
    }

    /// The environment variables the configuration reads (`settings.variables`).
    pub fn variables(&self) -> Vec<String> {
        self.with_utility(|g, s| g.toolprune_pruner_settings().call_variables(s)).unwrap_or_default()
    }

    /// The config file's path from those variables (`settings.config-path`).
    pub fn config_path(&self, env: &[(String, String)]) -> Option<String> {
        self.with_utility(|g, s| g.toolprune_pruner_settings().call_config_path(s, env)).ok().flatten()
    }

    /// The configuration from the variables and the file's text
    /// (`settings.resolve`): defaults < file < environment. Errors: the
    /// guest's one-line message (never the file's content), or a trap.
    pub fn resolve(&self, env: &[(String, String)], file: Option<&str>) -> Result<GuestConfig, String> {
        let bytes = file.map_or(0, str::len);
        self.with_utility_sized(bytes, |g, s| g.toolprune_pruner_settings().call_resolve(s, env, file))
            .map_err(|f| f.to_string())?
    }

    /// The configuration of this process: the variables the guest names,
    /// read with `env`, and the config file they point at (read if it
    /// exists), resolved by the guest. Errors as [`Pruner::resolve`], and an
    /// unreadable file (`cannot read PATH: …`).
    pub fn configuration(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<GuestConfig, String> {
        let pairs = self.environment(env);
        let file = match self.config_path(&pairs) {
            Some(path) => read_config_file(Path::new(&path)).map_err(|e| format!("cannot read {path}: {e}"))?,
            None => None,
        };
        self.resolve(&pairs, file.as_deref())
    }

    /// The `(name, value)` pairs of the variables the guest reads that are set.
    pub fn environment(&self, env: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
        self.variables().into_iter().filter_map(|name| env(&name).map(|value| (name, value))).collect()
    }

    /// The wait before retrying a failed attempt, or none (`settings.retry-delay`, SPEC §11).
    pub fn retry_delay(&self, facts: RetryFacts) -> Option<u32> {
        self.with_utility(|g, s| g.toolprune_pruner_settings().call_retry_delay(s, &facts)).ok().flatten()
    }

    /// The `omitted` tool as a JSON object in an SDK's shape (SPEC §10,
    /// `omitted.tool`), parsed. Errors: a trap.
    pub fn omitted_tool(&self, dialect: Dialect, lang: Lang) -> Result<serde_json::Value, HostFailure> {
        let text = self.with_utility(|g, s| g.toolprune_pruner_omitted().call_tool(s, lang, dialect))?;
        serde_json::from_str(&text).map_err(|e| HostFailure {
            reason: FailureReason::GuestTrap,
            limit: None,
            message: format!("the guest's tool spec is not JSON: {e}"),
        })
    }

    /// The optional argument an MCP proxy adds to each prunable tool's
    /// schema in its `argument` basis mode (SPEC §15, `omitted.request-argument`):
    /// `{"name": …, "schema": {…}}`, parsed. Errors: a trap.
    pub fn request_argument(&self, lang: Lang) -> Result<serde_json::Value, HostFailure> {
        let text = self.with_utility(|g, s| g.toolprune_pruner_omitted().call_request_argument(s, lang))?;
        serde_json::from_str(&text).map_err(|e| HostFailure {
            reason: FailureReason::GuestTrap,
            limit: None,
            message: format!("the guest's request argument is not JSON: {e}"),
        })
    }

    /// `prune --json` of every CLI (`report.prune-json`, rendered once in
    /// the guest): `result`'s report as pretty-printed JSON without a final
    /// newline; `scorer` is the scorer's label. Errors: a trap.
    pub fn prune_json(&self, result: &crate::PruneResult, scorer: &str) -> Result<String, HostFailure> {
        let guest = result.to_guest();
        let failure = result.failure.as_ref().map(|f| (f.reason, f.limit));
        self.with_utility(|g, s| g.toolprune_pruner_report().call_prune_json(s, guest.as_ref(), failure, scorer))
    }

    /// `split --json` of every CLI (`report.split-json`): how pruning splits
    /// `text`, as pretty-printed JSON without a final newline. Errors: a trap.
    pub fn split_json(&self, text: &str) -> Result<String, HostFailure> {
        self.with_utility_sized(text.len(), |g, s| g.toolprune_pruner_report().call_split_json(s, text))
    }

    /// `split` of every CLI (`report.split-table`): the same as a table for
    /// people, ending with a newline. Errors: a trap.
    pub fn split_table(&self, text: &str) -> Result<String, HostFailure> {
        self.with_utility_sized(text.len(), |g, s| g.toolprune_pruner_report().call_split_table(s, text))
    }

    /// `route --json` of every CLI (`report.route-json`): the judge's
    /// decision as pretty-printed JSON (keys sorted), without a final
    /// newline. Errors: a trap.
    pub fn route_json(&self, decision: &crate::types::Decision) -> Result<String, HostFailure> {
        self.with_utility(|g, s| g.toolprune_pruner_report().call_route_json(s, decision))
    }

    /// `route` of every CLI (`report.route-summary`): one line for people,
    /// ending with a newline. Errors: a trap.
    pub fn route_summary(&self, decision: &crate::types::Decision) -> Result<String, HostFailure> {
        self.with_utility(|g, s| g.toolprune_pruner_report().call_route_summary(s, decision))
    }

    /// A rules file's problems as every CLI prints them
    /// (`report.rules-errors`): `FILE:LINE:COLUMN: MESSAGE` lines. Errors: a trap.
    pub fn rules_errors(&self, file: &str, errors: &[crate::types::LoadError]) -> Result<String, HostFailure> {
        self.with_utility(|g, s| g.toolprune_pruner_report().call_rules_errors(s, file, errors))
    }

    /// The host failure line (SPEC §11, §12): the guest's
    /// `settings.failure-line` from a fresh instance, or, when even that
    /// fails, `tool prune: outcome=failed reason=instantiate`.
    pub(crate) fn failure_line(&self, op: Operation, agent: &str, tool: &str, failure: &HostFailure) -> String {
        let fresh = self.instantiate().and_then(|mut instance| {
            instance.call_bootstrap(|g, s| {
                g.toolprune_pruner_settings().call_failure_line(s, op, agent, tool, failure.reason, failure.limit)
            })
        });
        fresh.unwrap_or_else(|_| "tool prune: outcome=failed reason=instantiate".to_string())
    }

    /// `omitted.unavailable(lang)` from a fresh instance (after a trap), or
    /// an English fallback when even that fails.
    pub(crate) fn unavailable(&self, lang: Lang) -> String {
        let fresh = self.instantiate().and_then(|mut instance| {
            instance.call_bootstrap(|g, s| g.toolprune_pruner_omitted().call_unavailable(s, lang))
        });
        fresh.unwrap_or_else(|_| "omitted is unavailable right now; try again".to_string())
    }
}

/// One live instance in its own store. After any error it must be dropped
/// (a trapped instance may not be entered again).
pub(crate) struct Instance {
    store: Store<HostState>,
    bindings: Toolprune,
    limits: LimitsOverride,
}

impl Instance {
    /// The scoring context of the next call (`prune`, `decide`).
    pub(crate) fn set_scoring(&mut self, scoring: CallScoring) {
        self.store.data_mut().scoring = Some(scoring);
    }

    /// The scoring context back, with what the import saw.
    pub(crate) fn take_scoring(&mut self) -> Option<CallScoring> {
        self.store.data_mut().scoring.take()
    }

    /// One call with [`BOOTSTRAP_FUEL`] (pure calls on small inputs).
    pub(crate) fn call_bootstrap<R>(
        &mut self,
        f: impl FnOnce(&Toolprune, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, HostFailure> {
        self.run(BOOTSTRAP_FUEL, None, f)
    }

    /// The guest's limits for a call with a text of `bytes` bytes, the
    /// override applied.
    pub(crate) fn limits_for(&mut self, bytes: usize) -> Result<CallLimits, HostFailure> {
        let limits = self.call_bootstrap(|g, s| g.toolprune_pruner_settings().call_call_limits_for(s, bytes as u64))?;
        Ok(self.limits.apply(limits))
    }

    /// One call under the limits for a text of `bytes` bytes.
    pub(crate) fn call_sized<R>(
        &mut self,
        bytes: usize,
        f: impl FnOnce(&Toolprune, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, HostFailure> {
        let limits = self.limits_for(bytes)?;
        self.run(limits.fuel, Some(limits.memory_bytes), f)
    }

    fn run<R>(
        &mut self,
        fuel: u64,
        memory: Option<u64>,
        f: impl FnOnce(&Toolprune, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, HostFailure> {
        if let Some(memory) = memory.or(self.limits.memory_bytes) {
            self.store.data_mut().limits = Limiter::new(memory);
        }
        self.store.data_mut().limits.memory_refused = false;
        self.store.set_fuel(fuel).map_err(|e| HostFailure::trap(&e, false))?;
        let answer = f(&self.bindings, &mut self.store);
        answer.map_err(|e| HostFailure::trap(&e, self.store.data().limits.memory_refused))
    }
}
