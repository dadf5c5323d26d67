// Gates that hold a plan's next machine start. Soak (spec.soak): an updated machine keeps its slot until it stayed
// healthy that long (soakGate). Maintenance windows (spec.maintenanceWindows): outside every window no
// new machine starts, exactly like spec.paused; machines in flight finish, or with spec.maintenanceWindowEnd Abort the
// plan aborts them when a window closes. Pure: the snapshot's clock is passed in, the calendar is src/api/windows.ts.
import type { InPlaceUpdatePlan, InPlaceUpdatePlanStatus, KubeObject, MachineUpdate } from '../api/index.js';
import { ConditionTypes, PlanEventReasons, Reasons, UpdateStatus, boundMessage, isTerminal } from '../api/index.js';
import { conditionsOf } from '../api/capi/index.js';
import { InvalidDurationError, parseGoDuration } from '../api/duration.js';
import type { MaintenanceWindowSpec } from '../api/windows.js';
import { describeWindowInstant, maintenanceWindowState, validateMaintenanceWindows } from '../api/windows.js';
import type { AlertsRead, PlanEvent } from './inputs.js';
import { alertGateRefusals, type AlertGatePolicy } from '../api/alert-gate-policy.js';

/** Gate names as metrics and docs spell them. */
export const GateNames = { maintenanceWindow: 'maintenanceWindow', alerts: 'alerts', soak: 'soak', verification: 'verification' } as const;
/** One gate's name. */
export type GateName = (typeof GateNames)[keyof typeof GateNames];

/** The plan's window status field (status.maintenanceWindow). */
export type WindowStatus = NonNullable<InPlaceUpdatePlanStatus['maintenanceWindow']>;

/** Where the plan stands against its windows at the snapshot's instant. */
export interface WindowGate {
  /** Validation problems of spec.maintenanceWindows (paths prefixed), empty when valid or unset. */
  problems: string[];
  /** Undefined without windows or with invalid ones; otherwise open/closed and when that changes. */
  state?: { open: boolean; nextChange: Date; message: string };
  /** spec.maintenanceWindowEnd is Abort. */
  abortAtEnd: boolean;
}

// Overlap checks enumerate a year of openings (tens of thousands of luxon instants for 32 windows): too costly for
// every reconcile of every plan. The answer depends on the specs and, through the year's daylight-saving changes,
// only on the day, so it is memoised per (specs, UTC day), bounded.
const MEMO_MAX = 256;
const memo = new Map<string, string[]>();

function validateMemo(specs: readonly MaintenanceWindowSpec[], now: Date): string[] {
  const key = `${now.toISOString().slice(0, 10)}|${JSON.stringify(specs)}`;
  const hit = memo.get(key);
  if (hit) return hit;
  const problems = validateMaintenanceWindows(specs, now);
  if (memo.size >= MEMO_MAX) memo.delete(memo.keys().next().value!);
  memo.set(key, problems);
  return problems;
}

/** The plan's window gate at `now`. */
export function windowGate(plan: InPlaceUpdatePlan, now: Date): WindowGate {
  const specs = (plan.spec.maintenanceWindows ?? []) as MaintenanceWindowSpec[];
  const abortAtEnd = plan.spec.maintenanceWindowEnd === 'Abort';
  if (specs.length === 0) return { problems: [], abortAtEnd };
  const problems = validateMemo(specs, now);
  if (problems.length > 0) return { problems, abortAtEnd };
  const st = maintenanceWindowState(specs, now)!;
  const spec = specs[st.window]!;
  return st.open
    ? {
        problems,
        abortAtEnd,
        state: { open: true, nextChange: st.closesAt, message: `window open until ${describeWindowInstant(spec, st.closesAt)}` },
      }
    : {
        problems,
        abortAtEnd,
        state: { open: false, nextChange: st.opensAt, message: `window closed until ${describeWindowInstant(spec, st.opensAt)}` },
      };
}

/** status.maintenanceWindow for this reconcile (since moves only when the state flips), undefined without windows. */
export function windowStatus(prev: WindowStatus | undefined, gate: WindowGate, now: string): WindowStatus | undefined {
  if (!gate.state) return undefined;
  const state = gate.state.open ? 'Open' : 'Closed';
  return {
    state,
    since: prev?.state === state && prev.since ? prev.since : now,
    nextChange: gate.state.nextChange.toISOString(),
    message: gate.state.message,
  };
}

/** The Event of a window state change, from the recorded state (level-based: a restart records nothing twice). */
export function windowEvents(prev: WindowStatus | undefined, next: WindowStatus | undefined, abortAtEnd: boolean): PlanEvent[] {
  if (!next || prev?.state === next.state) return [];
  if (next.state === 'Open')
    return prev ? [{ type: 'Normal', reason: PlanEventReasons.windowOpened, message: `maintenanceWindow: ${next.message}` }] : [];
  const inFlight = abortAtEnd ? 'machines in update are aborted (maintenanceWindowEnd Abort)' : 'machines in update finish';
  return [
    {
      type: 'Normal',
      reason: PlanEventReasons.windowClosed,
      message: `maintenanceWindow: ${next.message}; no new machine starts, ${inFlight}`,
    },
  ];
}

/** The gate holding a plan as its recorded status says (Ready reason), with since when; undefined when none holds it. */
export function heldBy(plan: InPlaceUpdatePlan): { gate: string; since: number } | undefined {
  const st = plan.status;
  if (!st || isTerminal(st.updateStatus)) return undefined;
  const ready = st.conditions?.find((c) => c.type === ConditionTypes.ready);
  if (ready?.reason === Reasons.waitingForAlerts) {
    const since = Date.parse(st.alertGate?.since ?? ready.lastTransitionTime);
    return Number.isFinite(since) ? { gate: GateNames.alerts, since } : undefined;
  }
  if (ready?.reason !== Reasons.waitingForMaintenanceWindow) return undefined;
  const since = Date.parse(st.maintenanceWindow?.since ?? ready.lastTransitionTime);
  return Number.isFinite(since) ? { gate: GateNames.maintenanceWindow, since } : undefined;
}

/** Shortest and longest spec.soak. */
export const SOAK_MIN_MS = 1_000;
/** Longest spec.soak: a day; a longer hold is a maintenance window's job. */
export const SOAK_MAX_MS = 24 * 3_600_000;

/** A recorded soak failure (status.gateFailures). */
export type GateFailure = NonNullable<InPlaceUpdatePlanStatus['gateFailures']>[number];

/** The soak gate over the plan's MachineUpdates at `now`. */
export interface SoakView {
  /** Problems with spec.soak (empty when valid or unset). */
  problems: string[];
  /** The MachineUpdates as the rollout counts them: soaking ones in flight, failed soaks failed. */
  mus: ReadonlyMap<string, MachineUpdate>;
  /** Machine name to "machine m soaking 3m/10m", per target key (kind/name). */
  soaking: Map<string, string[]>;
  /** Every soak failure: the recorded ones and those seen now (status.gateFailures). */
  failures: GateFailure[];
  /** When the first soak ends (reconcile again then). */
  wakeAt?: Date;
  /** The machine gates holding a machine's slot now (soak, verification). */
  holding: Set<GateName>;
  /** The updated machines whose answer may still change with the clock (soaking, verifying, recorded failed). */
  open: Set<string>;
}

/** "3m", "1h5m", "42s": an elapsed time for soak messages (whole seconds). */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const out = `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${sec ? `${sec}s` : ''}`;
  return out || '0s';
}

function durationProblems(
  value: string | undefined,
  path: string,
  max: { ms: number; label: string } = { ms: SOAK_MAX_MS, label: '24h' },
): { problems: string[]; ms?: number } {
  if (value === undefined || value === '') return { problems: [] };
  try {
    const ms = parseGoDuration(value);
    if (ms < SOAK_MIN_MS || ms > max.ms) return { problems: [`${path}: ${value} is outside 1s..${max.label}`] };
    return { problems: [], ms };
  } catch (e) {
    if (!(e instanceof InvalidDurationError)) throw e;
    return { problems: [`${path}: ${e.message.slice(0, 120)} (a Go duration such as 10m)`] };
  }
}

/** The Kubernetes version a MachineUpdate sets (an updater responsible for Machine /spec/version), if any. */
function targetVersion(mu: MachineUpdate): string | undefined {
  for (const u of mu.spec.updaters ?? [])
    for (const r of u.responsibilities ?? [])
      if (r.selectResource === 'Machine' && r.path === '/spec/version' && typeof r.value === 'string') return r.value;
  return undefined;
}

/** A field of Machine.status.nodeInfo: what Cluster API mirrors from the Node. */
function nodeInfoOf(m: KubeObject, field: 'kubeletVersion' | 'osImage' | 'kernelVersion' | 'bootID'): string | undefined {
  const v = (m['status'] as { nodeInfo?: Record<string, unknown> } | undefined)?.nodeInfo?.[field];
  return typeof v === 'string' ? v : undefined;
}

/**
 * Annotation on a MachineUpdate: the Machine's status.nodeInfo.bootID when its update started (written at create), so
 * an updater's `verify.reboot` can be checked against a changed bootID.
 */
export const BOOT_ID_BEFORE_ANNOTATION = 'inplace.cluster.x-k8s.io/boot-id-before';

/** The bootID to record on a new MachineUpdate of `machine`, if Cluster API mirrors one. */
export function bootIdBefore(machine: KubeObject | undefined): string | undefined {
  return machine ? nodeInfoOf(machine, 'bootID') : undefined;
}

/**
 * The kubelet reports the version Cluster API asked for: equal up to a leading `v` and, when only one side carries
 * semver build metadata (`+rke2r1`, `+k3s1`), that metadata (distributions append it to the kubelet's version).
 */
export function sameKubeletVersion(have: string | undefined, want: string): boolean {
  if (have === undefined) return false;
  // The common answer first: runs for every updated machine on every reconcile.
  if (have === want) return true;
  const norm = (v: string): string => v.trim().replace(/^v/, '');
  const [h, w] = [norm(have), norm(want)];
  if (h === w) return true;
  const core = (v: string): string => v.split('+')[0]!;
  return h.includes('+') !== w.includes('+') && core(h) === core(w);
}

/** spec.verification.timeout when unset. */
export const DEFAULT_VERIFY_TIMEOUT_MS = 10 * 60_000;

/** The mismatch of one node field against the value the update wants, if any. */
function nodeMismatch(
  machine: KubeObject,
  f: 'kubeletVersion' | 'osImage' | 'kernelVersion',
  label: string,
  want: string,
): Mismatch | undefined {
  const have = nodeInfoOf(machine, f);
  if (f === 'kubeletVersion' ? sameKubeletVersion(have, want) : have === want) return undefined;
  return {
    short: `${label} ${have ?? 'unknown'}, want ${want}`,
    long: `Machine.status.nodeInfo.${f} is ${have ?? 'unset'}, not ${want}`,
    kubelet: f === 'kubeletVersion',
  };
}

/** What the node of an updated machine must show, and what it shows instead. */
export interface Mismatch {
  /** Short form for the hold message: "kubelet v1.29.5, want v1.30.1". */
  short: string;
  /** Long form for the failure: "Machine.status.nodeInfo.kubeletVersion is v1.29.5, not v1.30.1". */
  long: string;
  kubelet: boolean;
}

/**
 * The checks of a MachineUpdate against its Machine: the Kubernetes version (when `kubelet`) and every updater's
 * `verify` (osImage, kernelVersion, reboot). Empty when the node shows everything.
 */
export function verificationMismatches(mu: MachineUpdate, machine: KubeObject, kubelet: boolean): Mismatch[] {
  // Runs for every updated machine on every reconcile of a plan: one pass over the updaters, no allocation unless
  // something does not match.
  let out: Mismatch[] | undefined;
  const field = (f: 'kubeletVersion' | 'osImage' | 'kernelVersion', label: string, want: string | undefined): void => {
    const m = want === undefined ? undefined : nodeMismatch(machine, f, label, want);
    if (m) (out ??= []).push(m);
  };
  if (kubelet) field('kubeletVersion', 'kubelet', targetVersion(mu));
  const ups = mu.spec.updaters ?? [];
  // The last updater that names a value decides, as the commit's order.
  let osImage: string | undefined;
  let kernel: string | undefined;
  let reboot = false;
  for (const u of ups) {
    const v = u.verify;
    if (!v) continue;
    if (v.osImage !== undefined) osImage = v.osImage;
    if (v.kernelVersion !== undefined) kernel = v.kernelVersion;
    if (v.reboot === true) reboot = true;
  }
  field('osImage', 'osImage', osImage);
  field('kernelVersion', 'kernel', kernel);
  if (reboot) {
    const before = mu.metadata?.annotations?.[BOOT_ID_BEFORE_ANNOTATION];
    const now = nodeInfoOf(machine, 'bootID');
    if (before === undefined)
      (out ??= []).push({
        short: 'bootID before the update unknown',
        long: `the bootID before the update is unknown (no ${BOOT_ID_BEFORE_ANNOTATION} annotation), so the reboot cannot be verified`,
        kubelet: false,
      });
    else if (now === undefined || now === before)
      (out ??= []).push({
        short: `bootID ${now ?? 'unknown'} unchanged (no reboot seen)`,
        long: `Machine.status.nodeInfo.bootID is still ${now ?? 'unset'} (the node did not reboot)`,
        kubelet: false,
      });
  }
  return out ?? [];
}

/**
 * The machine gates after an update. Verification (spec.verification): a machine whose update set a Kubernetes version
 * counts as updated only once Machine.status.nodeInfo.kubeletVersion shows it; until the timeout it keeps its slot,
 * after it fails naming the mismatch. Soak: a machine whose MachineUpdate completed `updated` less than spec.soak ago keeps its slot (counted in
 * flight); one whose Machine reports v1beta2 Ready or NodeHealthy False in that time fails, and the failure is
 * recorded (status.gateFailures) so that a machine that recovers later still counts as failed (level-based). Unknown
 * or absent conditions do not fail a machine: they hold it like a not-Ready machine. The soak starts at the
 * MachineUpdate's completionTime.
 */
export function soakGate(
  plan: InPlaceUpdatePlan,
  mus: ReadonlyMap<string, MachineUpdate>,
  machines: readonly KubeObject[],
  now: Date,
  given: SoakGiven = {},
): SoakView {
  const { names, facts } = given;
  const cfg = soakSettings(plan);
  const recorded = plan.status?.gateFailures ?? [];
  const failed = new Map(recorded.map((f) => [f.machine, f.message]));
  const out = new SoakOutcome({
    problems: cfg.problems,
    mus,
    soaking: new Map(),
    failures: [...recorded],
    holding: new Set(),
    open: new Set(names ? given.open : []),
  });
  const byName = given.machineByName ?? new Map(machines.map((m) => [m.metadata.name ?? '', m]));
  // `names`: the updates whose answer may differ from the last pass's, in map order; every other one was passed or
  // skipped for good then (same objects, and the clock only moves forward), or is in `open`.
  const open = out.view.open;
  for (const name of names ?? mus.keys()) {
    const mu = mus.get(name);
    if (!mu) continue;
    open.delete(name);
    if (mu.status?.updateStatus !== UpdateStatus.updated) continue;
    open.add(name);
    const recordedMessage = failed.get(name);
    if (recordedMessage !== undefined) {
      out.setMu(name, withStatus(mu, UpdateStatus.failed, recordedMessage));
      continue;
    }
    const machine = byName.get(name);
    if (!machine) continue;
    const { done, mismatches } = facts?.get(name) ?? soakFacts(mu, machine, cfg.verifying);
    // A machine gone (or an update with no completion time) has nothing to verify or soak.
    if (!Number.isFinite(done)) open.delete(name);
    else if (mismatches.length > 0) out.verification(mu, mismatches, done, cfg.verifyMs, now);
    else if (cfg.soakMs === undefined || now.getTime() >= done + cfg.soakMs) open.delete(name);
    else out.soak(mu, machine, done, cfg.soakMs, now);
  }
  return out.view;
}

/**
 * What soakGate may be given, derived already: the machines by name, the names to look at (the others passed or were
 * skipped for good last time, save `open`), the names left open last time, and each name's soakFacts.
 */
export interface SoakGiven {
  machineByName?: ReadonlyMap<string, KubeObject> | undefined;
  names?: readonly string[] | undefined;
  open?: ReadonlySet<string> | undefined;
  facts?: ReadonlyMap<string, SoakFacts> | undefined;
}

/** The time-independent facts of a (MachineUpdate, Machine) pair: its completion time and verification mismatches. */
export interface SoakFacts {
  done: number;
  mismatches: Mismatch[];
}

/** The plan's soak and verification settings (with their problems). */
export function soakSettings(plan: InPlaceUpdatePlan): {
  problems: string[];
  soakMs: number | undefined;
  verifying: boolean;
  verifyMs: number;
} {
  const soakSpec = durationProblems(plan.spec.soak, 'spec.soak');
  const verifySpec = durationProblems(plan.spec.verification?.timeout, 'spec.verification.timeout');
  return {
    problems: [...soakSpec.problems, ...verifySpec.problems],
    soakMs: soakSpec.ms,
    // The kubelet check too: with spec.verification set (and not Disabled).
    verifying: plan.spec.verification?.mode !== 'Disabled',
    verifyMs: verifySpec.ms ?? DEFAULT_VERIFY_TIMEOUT_MS,
  };
}

/**
 * The time-independent facts of a (MachineUpdate, Machine) pair: its completion and its verification mismatches; what
 * the clock decides (hold, fail, pass) is derived every reconcile.
 */
export function soakFacts(mu: MachineUpdate, machine: KubeObject, kubelet: boolean): SoakFacts {
  const done = Date.parse(mu.status?.completionTime ?? '');
  const mismatches = kubelet && Number.isFinite(done) ? verificationMismatches(mu, machine, kubelet) : [];
  return { done, mismatches };
}

/** soakGate's view as it is built: the machines held and failed, over the plan's map of updates. */
class SoakOutcome {
  // The held and failed ones over the plan's map, not a copy of it: some machine verifies or soaks on most reconciles
  // of a busy rollout, and a copy of every update per such reconcile was O(machines) (~1.5 ms at 30,003 machines).
  private over: OverlayMap<string, MachineUpdate> | undefined;

  constructor(readonly view: SoakView) {}

  /** Shows an update with another status in the view's map. */
  setMu(name: string, m: MachineUpdate): void {
    if (!this.over) this.view.mus = this.over = new OverlayMap(this.view.mus);
    this.over.override(name, m);
  }

  private hold(mu: MachineUpdate, note: string, until: Date, gate: GateName): void {
    const view = this.view;
    view.holding.add(gate);
    const key = `${mu.spec.target.kind}/${mu.spec.target.name}`;
    const notes = view.soaking.get(key) ?? [];
    notes.push(note);
    view.soaking.set(key, notes);
    this.setMu(mu.spec.machineRef.name, withStatus(mu, UpdateStatus.updating));
    if (!view.wakeAt || until < view.wakeAt) view.wakeAt = until;
  }

  private fail(mu: MachineUpdate, message: string, gate: 'soak' | 'verification'): void {
    this.view.failures.push({ machine: mu.spec.machineRef.name, message, gate });
    this.setMu(mu.spec.machineRef.name, withStatus(mu, UpdateStatus.failed, message));
  }

  /** A machine the node does not show updated yet: held until the verification timeout, failed after it. */
  verification(mu: MachineUpdate, mismatches: readonly Mismatch[], done: number, verifyMs: number, now: Date): void {
    const name = mu.spec.machineRef.name;
    if (now.getTime() < done + verifyMs) {
      this.hold(
        mu,
        `machine ${name} verifying: ${mismatches.map((x) => x.short).join(', ')} (${shortDuration(now.getTime() - done)}/${shortDuration(verifyMs)})`,
        new Date(done + verifyMs),
        GateNames.verification,
      );
      return;
    }
    const what = mismatches.every((x) => x.kubelet) ? 'the node does not run the new kubelet' : 'the node does not show it';
    this.fail(
      mu,
      boundMessage(
        `machine ${name} failed verification: ${mismatches.map((x) => x.long).join('; ')}, ${shortDuration(verifyMs)} after its update (the updater reported updated, ${what})`,
        512,
      ),
      GateNames.verification,
    );
  }

  /** A machine within its soak: failed when its Machine reports Ready or NodeHealthy False, held otherwise. */
  soak(mu: MachineUpdate, machine: KubeObject, done: number, ms: number, now: Date): void {
    const name = mu.spec.machineRef.name;
    const bad = conditionsOf(machine).filter((c) => (c.type === 'Ready' || c.type === 'NodeHealthy') && c.status === 'False');
    if (bad.length > 0) {
      const why = bad.map((c) => `${c.type}=False${c.reason ? ` (${c.reason}${c.message ? `: ${c.message}` : ''})` : ''}`).join(', ');
      const message = boundMessage(
        `machine ${name} turned unhealthy during its soak (${shortDuration(now.getTime() - done)} of ${shortDuration(ms)} after its update): ${why}`,
        512,
      );
      this.fail(mu, message, GateNames.soak);
      return;
    }
    this.hold(
      mu,
      `machine ${name} soaking ${shortDuration(now.getTime() - done)}/${shortDuration(ms)}`,
      new Date(done + ms),
      GateNames.soak,
    );
  }
}

/**
 * A map read as `base` with some of its keys' values replaced (the same keys in the same order as a copy of `base` with
 * those values set). `base` must not change while this is read; only keys of `base` may be overridden.
 */
export class OverlayMap<K, V extends object> implements ReadonlyMap<K, V> {
  private readonly over = new Map<K, V>();
  constructor(readonly base: ReadonlyMap<K, V>) {}

  /** Replaces the value of `key`, a key of `base` (another key would break the order and size a copy keeps). */
  override(key: K, value: V): void {
    if (!this.base.has(key)) throw new Error('OverlayMap: only keys of the base map can be overridden');
    if (value === undefined || value === null) throw new Error('OverlayMap: a value is required');
    this.over.set(key, value);
  }

  /** The keys whose value is replaced, with their values. */
  get overrides(): ReadonlyMap<K, V> {
    return this.over;
  }

  get size(): number {
    return this.base.size;
  }

  get(key: K): V | undefined {
    // One lookup in the few overrides (values are never undefined: override() takes only keys of base's values).
    return (this.over.size > 0 ? this.over.get(key) : undefined) ?? this.base.get(key);
  }

  has(key: K): boolean {
    return this.base.has(key);
  }

  *entries(): MapIterator<[K, V]> {
    for (const [k, v] of this.base) yield [k, this.over.get(k) ?? v];
  }

  keys(): MapIterator<K> {
    return this.base.keys();
  }

  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(fn: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }
}

/** A copy of `mu` whose status the rollout reads differently (never written back). */
function withStatus(mu: MachineUpdate, updateStatus: string, message?: string): MachineUpdate {
  return {
    ...mu,
    status: { ...mu.status, updateStatus, ...(message !== undefined ? { message } : {}) },
  } as MachineUpdate;
}

/**
 * How often the endpoint of a plan's alert gate is read (alerts change without Kubernetes events): once per interval per
 * plan, whatever else wakes the plan meanwhile (the controller keeps the last read per plan, with its time).
 */
export const ALERTS_POLL_MS = 5_000;
/** Longest spec.alertGate.holdTimeout. */
export const ALERT_HOLD_MAX_MS = 7 * 24 * 3_600_000;

/** The plan's alert gate status field (status.alertGate). */
export type AlertGateStatus = NonNullable<InPlaceUpdatePlanStatus['alertGate']>;

/** One label matcher: name="value" or name!="value". */
interface Matcher {
  name: string;
  negate: boolean;
  value: string;
}

const MATCHER = /^([a-zA-Z_][a-zA-Z0-9_]*)\s*(!=|=)\s*"((?:[^"\\]|\\.)*)"$/;

/** Parses a matcher; undefined when malformed. */
export function parseMatcher(text: string): Matcher | undefined {
  const m = MATCHER.exec(text.trim());
  if (!m) return undefined;
  return { name: m[1]!, negate: m[2] === '!=', value: m[3]!.replace(/\\(.)/g, '$1') };
}

/** Where the alert gate stands this reconcile. */
export interface AlertGate {
  problems: string[];
  /** No new machine starts. */
  held: boolean;
  /** Held longer than holdTimeout (sticky, from status): the plan ends failed once nothing is in flight. */
  halted: boolean;
  /** "alert NodeDown firing (…)", the endpoint's error, or the halt. */
  message?: string;
  status?: AlertGateStatus;
  /** When the endpoint's answer was read (RFC 3339): the next read is due one ALERTS_POLL_MS later. */
  readAt?: string;
}

/**
 * The alert gate from the endpoint's answer (`result`, read by alerts.ts), the operator's policy (`policy`: a url or
 * Secret it does not allow, or no policy at all, is a validation problem; the effect checked the same rule and read
 * nothing) and the recorded status: a matching firing alert or an endpoint that cannot be read (fail closed) holds
 * the plan; held for holdTimeout since the hold began, the plan halts, for good (status state Halted).
 */
export function alertGate(
  plan: InPlaceUpdatePlan,
  result: AlertsRead | undefined,
  now: Date,
  policy: AlertGatePolicy | undefined,
): AlertGate {
  const spec = plan.spec.alertGate;
  if (!spec) return { problems: [], held: false, halted: false };
  // Every refusal: the policy's (url, Secret) and the effect's (a Secret without the opt-in label), each once.
  const problems: string[] = [
    ...new Set([...alertGateRefusals(policy, spec, plan.metadata?.namespace ?? '', 'spec.alertGate'), ...(result?.refused ?? [])]),
  ];
  const matchers: Matcher[] = [];
  (spec.matchers ?? []).forEach((t, i) => {
    const m = parseMatcher(t);
    if (m) matchers.push(m);
    else problems.push(`spec.alertGate.matchers[${i}]: ${JSON.stringify(t.slice(0, 100))} is not name="value" or name!="value"`);
  });
  // Up to a week (the CRD's and the docs' bound), not the 24h of soak and verification.
  const hold = durationProblems(spec.holdTimeout, 'spec.alertGate.holdTimeout', { ms: ALERT_HOLD_MAX_MS, label: '168h' });
  problems.push(...hold.problems);
  // A Secret missing (or missing a key) before the plan started is a validation problem; once started, a hold.
  if (result?.secretProblem && !plan.status?.startTime) problems.push(result.secretProblem);
  if (problems.length > 0) return { problems, held: false, halted: false };
  const prev = plan.status?.alertGate;
  if (prev?.state === 'Halted')
    return { problems, held: true, halted: true, message: prev.message ?? 'halted by the alert gate', status: prev };
  let state: AlertGateStatus['state'];
  let message: string;
  if (!result) [state, message] = ['Unreachable', 'alerts not read yet (fail closed)'];
  else if (!result.ok) [state, message] = ['Unreachable', `alert endpoint unreadable, holding the plan (fail closed): ${result.error}`];
  else {
    const firing = result.alerts.filter(
      (a) => a.state === 'firing' && matchers.every((m) => ((a.labels[m.name] ?? '') === m.value) !== m.negate),
    );
    const names = [...new Set(firing.map((a) => a.labels['alertname'] ?? '(no alertname)'))];
    [state, message] =
      firing.length === 0
        ? ['Clear', 'no matching alert fires']
        : [
            'Firing',
            `alert ${names.slice(0, 5).join(', ')}${names.length > 5 ? ` and ${names.length - 5} more` : ''} firing (${(spec.matchers ?? []).join(', ') || 'any alert'})`,
          ];
  }
  const holding = state !== 'Clear';
  const wasHolding = prev?.state === 'Firing' || prev?.state === 'Unreachable';
  // The hold's start survives Firing <-> Unreachable (holdTimeout counts from it); Clear keeps the time it cleared. An
  // unchanged gate leaves status.alertGate as it was: a new `since` per reconcile was a status write per reconcile, and
  // each write woke the next reconcile (a write per second per idle gated plan).
  const kept = holding ? wasHolding : prev?.state === 'Clear';
  const since = kept && prev?.since ? prev.since : now.toISOString();
  if (holding && now.getTime() - Date.parse(since) >= hold.ms!) {
    const halted = boundMessage(`halted: held longer than holdTimeout ${spec.holdTimeout}: ${message}`, 1024);
    return { problems, held: true, halted: true, message: halted, status: { state: 'Halted', since: now.toISOString(), message: halted } };
  }
  return {
    problems,
    held: holding,
    halted: false,
    message,
    status: { state, since, message: boundMessage(message, 1024) },
    ...(result?.at ? { readAt: result.at } : {}),
  };
}

/** The Event of an alert gate state change (from the recorded state). */
export function alertGateEvents(prev: AlertGateStatus | undefined, next: AlertGateStatus | undefined): PlanEvent[] {
  if (!next || prev?.state === next.state) return [];
  const msg = next.message ?? '';
  switch (next.state) {
    case 'Clear':
      return prev ? [{ type: 'Normal', reason: PlanEventReasons.alertGateCleared, message: `alertGate: ${msg}` }] : [];
    case 'Halted':
      return [{ type: 'Warning', reason: PlanEventReasons.alertGateHalted, message: `alertGate: ${msg}` }];
    default:
      // Firing <-> Unreachable are both a hold: one Event when the hold starts.
      return prev?.state === 'Firing' || prev?.state === 'Unreachable'
        ? []
        : [{ type: 'Warning', reason: PlanEventReasons.alertGateHolding, message: `alertGate: ${msg}; no new machine starts` }];
  }
}

/**
 * Gate failures this reconcile adds (for the metrics), from the recorded status and the next: machines newly in
 * status.gateFailures by gate (soak or verification; older records without a gate count as soak), and an alert gate
 * that turned Halted.
 */
export function gateFailureDeltas(prev: InPlaceUpdatePlanStatus | undefined, next: InPlaceUpdatePlanStatus): Map<GateName, number> {
  const out = new Map<GateName, number>();
  const before = new Set((prev?.gateFailures ?? []).map((f) => f.machine));
  for (const f of next.gateFailures ?? []) {
    if (before.has(f.machine)) continue;
    const gate = f.gate === GateNames.verification ? GateNames.verification : GateNames.soak;
    out.set(gate, (out.get(gate) ?? 0) + 1);
  }
  if (next.alertGate?.state === 'Halted' && prev?.alertGate?.state !== 'Halted') out.set(GateNames.alerts, 1);
  return out;
}
