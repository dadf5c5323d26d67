// Pure rendering of a plan's status as a tree (plan -> targets -> machines -> tasks), like `clusterctl describe`.
import {
  ConditionTypes,
  isTerminal,
  type Condition,
  type InPlaceUpdatePlan,
  type KubeObject,
  type MachineUpdate,
  type TargetKind,
} from '../api/index.js';
import { safeText } from './safe-text.js';

/** One line of the tree. */
export interface TreeNode {
  name: string;
  status: string;
  reason: string;
  /** Age (kubectl style) or '' when unknown. */
  age: string;
  message: string;
  children: TreeNode[];
}

/** Kubernetes-style short age of `from` at `now`, e.g. `45s`, `3m20s`, `2h`, `4d`; '' when `from` is unset or invalid. */
export function humanAge(from: string | undefined, now: Date): string {
  if (!from) return '';
  const t = Date.parse(from);
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, Math.floor((now.getTime() - t) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  return `${d}d`;
}

const cond = (conds: readonly Condition[] | undefined, type: string): Condition | undefined => conds?.find((c) => c.type === type);

/** The most telling condition of a plan: a False Valid first (it blocks everything), else Ready. */
function planCondition(plan: InPlaceUpdatePlan): Condition | undefined {
  const valid = cond(plan.status?.conditions, ConditionTypes.valid);
  if (valid?.status === 'False') return valid;
  return cond(plan.status?.conditions, ConditionTypes.ready) ?? valid;
}

type Mu = MachineUpdate & KubeObject;

/** Builds the tree of a plan and its MachineUpdates (any order; sorted here). */
export function buildStatusTree(plan: InPlaceUpdatePlan & KubeObject, machineUpdates: readonly Mu[], now: Date): TreeNode {
  const pc = planCondition(plan);
  const st = plan.status;
  const progress = st?.progress ?? (st?.machines !== undefined ? `${st.updatedMachines ?? 0}/${st.machines} machines updated` : '');
  const paused = plan.spec.paused ? ' (paused)' : '';
  const root: TreeNode = {
    name: `InPlaceUpdatePlan/${plan.metadata.name}`,
    status: (st?.updateStatus ?? 'pending') + paused,
    reason: pc?.reason ?? '',
    age: humanAge(plan.metadata.creationTimestamp, now),
    message: [pc?.status === 'False' || pc?.status === 'Unknown' ? pc.message : undefined, progress].filter((x) => x).join(' — '),
    children: [],
  };
  // spec.maintenanceWindows: an open window's close matters too (no new machine starts after it); a closed one is
  // already the Ready message (reason WaitingForMaintenanceWindow). A finished plan waits for nothing.
  const mw = st?.maintenanceWindow;
  if (mw?.message && !isTerminal(st?.updateStatus) && !root.message.includes(mw.message))
    root.message = [root.message, mw.message].filter((x) => x).join(' — ');

  const targets: { kind: TargetKind; name: string; sequence: number }[] = [];
  if (plan.spec.controlPlane)
    targets.push({ kind: 'ControlPlane', name: plan.spec.controlPlane.name, sequence: plan.spec.controlPlane.sequence });
  for (const md of plan.spec.machineDeployments ?? []) targets.push({ kind: 'MachineDeployment', name: md.name, sequence: md.sequence });
  targets.sort(
    (a, b) => a.sequence - b.sequence || (a.kind === b.kind ? 0 : a.kind === 'ControlPlane' ? -1 : 1) || a.name.localeCompare(b.name),
  );

  for (const t of targets) {
    const row = st?.targets?.find((r) => r.kind === t.kind && r.name === t.name);
    const mine = machineUpdates
      .filter((mu) => mu.spec.target.kind === t.kind && mu.spec.target.name === t.name)
      .sort(
        (a, b) =>
          (a.status?.startTime ?? a.metadata.creationTimestamp ?? '').localeCompare(
            b.status?.startTime ?? b.metadata.creationTimestamp ?? '',
          ) || a.spec.machineRef.name.localeCompare(b.spec.machineRef.name),
      );
    const counts = row?.machines !== undefined ? `${row.updated ?? 0}/${row.machines} updated` : '';
    const extra = [
      row?.updating ? `${row.updating} updating` : '',
      row?.failed ? `${row.failed} failed` : '',
      row?.aborted ? `${row.aborted} aborted` : '',
    ].filter((x) => x);
    root.children.push({
      name: `${t.kind}/${t.name}`,
      status: row?.updateStatus ?? 'pending',
      reason: `sequence ${t.sequence}`,
      age: '',
      message: [counts, ...extra, row?.message ?? ''].filter((x) => x).join(', '),
      children: mine.map((mu) => machineNode(mu, now, machineGate(st, row?.message, mu.spec.machineRef.name))),
    });
  }
  return root;
}

/**
 * A task name under its machine's row, without what the screen already shows: C9 names are
 * `<machine>.<updater>.<hash>`, the machine is the row above and the updater is in REASON, so `….<hash>` remains.
 * Other names keep everything after a machine-name prefix.
 */
export function taskLabel(task: string, machine: string, updater: string): string {
  const full = `${machine}.${updater}.`;
  if (task.startsWith(full) && task.length > full.length) return `….${task.slice(full.length)}`;
  return machine.length >= 8 && task.startsWith(machine) && task.length > machine.length ? `…${task.slice(machine.length)}` : task;
}

/** What a plan gate says about one machine after its update: failed by soak/verification, or soaking / verifying. */
interface MachineGate {
  failed?: { gate: string; message: string };
  /** The target's note on it: "machine m soaking 3m/10m", "machine m verifying: kubelet …". */
  note?: { reason: string; message: string };
}

/** The gate state of `machine` from the plan status (status.gateFailures, the target row's soak/verify notes). */
function machineGate(st: InPlaceUpdatePlan['status'], rowMessage: string | undefined, machine: string): MachineGate {
  const f = st?.gateFailures?.find((x) => x.machine === machine);
  if (f) return { failed: { gate: f.gate ?? 'soak', message: f.message } };
  for (const part of (rowMessage ?? '').split('; ')) {
    if (part.startsWith(`machine ${machine} soaking `)) return { note: { reason: 'Soaking', message: part } };
    if (part.startsWith(`machine ${machine} verifying: `)) return { note: { reason: 'Verifying', message: part } };
  }
  return {};
}

function machineNode(mu: Mu, now: Date, gate: MachineGate = {}): TreeNode {
  const s = mu.status;
  const c = cond(s?.conditions, ConditionTypes.inPlaceUpdate) ?? cond(s?.conditions, ConditionTypes.ready);
  const health = cond(s?.conditions, ConditionTypes.healthCheckSucceeded);
  const running =
    s?.currentUpdater && !['updated', 'aborted', 'failed'].includes(s.updateStatus ?? '') ? `updater ${s.currentUpdater}` : '';
  const message = [
    running,
    s?.message ?? (c?.status !== 'True' ? c?.message : undefined),
    health?.status === 'False' ? `health: ${health.message ?? health.reason}` : '',
  ]
    .filter((x) => x)
    .join('; ');
  // The plan judges an updated machine by its gates: its MachineUpdate says updated, the plan counts it failed (or not
  // yet updated) and the screen says why.
  const judged = s?.updateStatus === 'updated' ? gate : {};
  return {
    name: `Machine/${mu.spec.machineRef.name}`,
    // No status yet is in flight: its first status may wait while its task runs (up to 5 s), as the plan counts it.
    status: judged.failed ? 'failed' : judged.note ? 'updating' : s?.updateStatus || 'updating',
    reason: judged.failed
      ? `${judged.failed.gate === 'verification' ? 'Verification' : 'Soak'}Failed`
      : (judged.note?.reason ?? c?.reason ?? ''),
    age: humanAge(s?.startTime ?? mu.metadata.creationTimestamp, now),
    message: judged.failed?.message ?? judged.note?.message ?? message,
    children: (s?.tasks ?? []).map((t) => ({
      // A task's name starts with its machine's (the row above): shown once, the rest (updater, hash) stays.
      name: `${t.kind}/${taskLabel(t.name, mu.spec.machineRef.name, t.updater)}`,
      status: t.updateStatus || 'pending',
      reason: `updater ${t.updater}`,
      age: humanAge(t.startTime, now),
      message: '',
      children: [],
    })),
  };
}

/** Shortest a NAME cell is cut to, however narrow the terminal. */
const MIN_NAME = 40;
/** Room the MESSAGE column gets when the names can give it up (names are shortened down to MIN_NAME for it). */
const WANTED_MESSAGE_ROOM = 60;
/** Room the MESSAGE column always gets, however wide the other columns are (it overflows the width rather than hide the reason). */
const MIN_MESSAGE_ROOM = 40;
/** A message longer than this many lines of its column is cut with `…` (the whole text is in `kubectl describe`). */
const MAX_MESSAGE_LINES = 6;

/** Shortens `s` to `max` characters keeping its start and its last 12 characters (where a generated name's hash is). */
export function shortenMiddle(s: string, max: number): string {
  const chars = [...s];
  if (chars.length <= max) return s;
  const tail = Math.min(12, Math.floor(max / 3));
  return `${chars.slice(0, max - tail - 1).join('')}…${chars.slice(chars.length - tail).join('')}`;
}

/** Splits `text` into lines of at most `room` characters, at spaces where it can; at most `maxLines`, the last cut with `…`. */
export function wrapText(text: string, room: number, maxLines = MAX_MESSAGE_LINES): string[] {
  const lines: string[] = [];
  let rest = [...text];
  while (rest.length > 0) {
    if (lines.length === maxLines - 1 && rest.length > room) {
      lines.push(`${rest.slice(0, room - 1).join('')}…`);
      return lines;
    }
    if (rest.length <= room) {
      lines.push(rest.join(''));
      break;
    }
    const space = rest.slice(0, room + 1).lastIndexOf(' ');
    const cut = space > room / 3 ? space : room;
    lines.push(rest.slice(0, cut).join('').trimEnd());
    rest = rest.slice(cut);
    while (rest[0] === ' ') rest.shift();
  }
  return lines;
}

/**
 * Renders the tree as aligned columns with box-drawing branches for `width` columns. Long names (task names carry a
 * hash) are shortened in the middle so that the MESSAGE column keeps its room, and a message longer than its column
 * wraps onto continuation lines under it (the reason a plan stopped is where people look, never cut to a few words).
 */
export function renderTree(root: TreeNode, width = 200): string {
  const rows: { name: string; node: TreeNode }[] = [];
  // Every cell comes from the cluster: made terminal-safe (and single-line) before widths are measured.
  const walk = (n: TreeNode, prefix: string, childPrefix: string): void => {
    rows.push({
      name: prefix + safeText(n.name),
      node: { ...n, status: safeText(n.status), reason: safeText(n.reason), age: safeText(n.age), message: safeText(n.message) },
    });
    n.children.forEach((c, i) => {
      const last = i === n.children.length - 1;
      walk(c, childPrefix + (last ? '└─' : '├─'), childPrefix + (last ? '  ' : '│ '));
    });
  };
  walk(root, '', '');
  const head = { name: 'NAME', status: 'STATUS', reason: 'REASON', age: 'AGE' };
  // Names give up their middle (their start and a task's hash stay) until MESSAGE has the room it wants.
  const others =
    Math.max(head.status.length, ...rows.map((r) => r.node.status.length)) +
    Math.max(head.reason.length, ...rows.map((r) => r.node.reason.length)) +
    Math.max(head.age.length, ...rows.map((r) => r.node.age.length)) +
    8;
  const maxName = Math.max(MIN_NAME, width - others - WANTED_MESSAGE_ROOM);
  for (const r of rows) r.name = shortenMiddle(r.name, maxName);
  const w = {
    name: Math.max(head.name.length, ...rows.map((r) => [...r.name].length)),
    status: Math.max(head.status.length, ...rows.map((r) => r.node.status.length)),
    reason: Math.max(head.reason.length, ...rows.map((r) => r.node.reason.length)),
    age: Math.max(head.age.length, ...rows.map((r) => r.node.age.length)),
  };
  const pad = (s: string, n: number): string => s + ' '.repeat(Math.max(0, n - [...s].length));
  const line = (name: string, status: string, reason: string, age: string, message: string): string[] => {
    const left = `${pad(name, w.name)}  ${pad(status, w.status)}  ${pad(reason, w.reason)}  ${pad(age, w.age)}  `;
    const indent = [...left].length;
    const room = Math.max(MIN_MESSAGE_ROOM, width - indent);
    const [first = '', ...more] = wrapText(message, room);
    return [(left + first).trimEnd(), ...more.map((m) => ' '.repeat(indent) + m)];
  };
  return (
    [
      ...line(head.name, head.status, head.reason, head.age, 'MESSAGE'),
      ...rows.flatMap((r) => line(r.name, r.node.status, r.node.reason, r.node.age, r.node.message)),
    ].join('\n') + '\n'
  );
}

/** How a plan ended, for `status -w` (undefined while it may still act). An invalid plan ends with Failed=True reason Invalid. */
export function planEnd(plan: InPlaceUpdatePlan & KubeObject): 'updated' | 'failed' | 'aborted' | 'invalid' | undefined {
  const st = plan.status?.updateStatus;
  if (isTerminal(st)) return st as 'updated' | 'failed' | 'aborted';
  const failed = cond(plan.status?.conditions, ConditionTypes.failed);
  // Only the verdict on the current spec counts: an edited plan (a new generation) is being validated again.
  if (failed?.status === 'True' && failed.reason === 'Invalid' && failed.observedGeneration === plan.metadata.generation) return 'invalid';
  return undefined;
}

/**
 * Lines under the tree that say what ended a plan and what to do: every problem of an invalid plan, and an owner the
 * plan kept paused (OwnersAligned=False: MixedMachines, AlignFailed) with the condition's own instructions.
 */
export function endNotes(plan: InPlaceUpdatePlan & KubeObject): string[] {
  const out: string[] = [];
  if (planEnd(plan) === 'invalid') {
    const valid = cond(plan.status?.conditions, ConditionTypes.valid);
    out.push('', 'The plan ended invalid and touched nothing. Problems:');
    for (const p of (valid?.message ?? '').split('; ').filter((x) => x)) out.push(`  - ${p}`);
    out.push(
      'Apply a corrected plan under a new name and delete this one (the spec is immutable); once a missing object exists,',
      '`inplace pause` then `inplace resume` (a new generation) validates this plan again.',
    );
  }
  // Machines the abort gave up on (their updater did not end its task within the abort grace period): what to check.
  const givenUp = plan.status?.givenUp ?? [];
  if (givenUp.length > 0) {
    out.push('', 'Given up on (their updater did not end the abort within the grace period; nothing committed):');
    for (const g of givenUp)
      out.push(
        `  - ${g.machine}: updater ${g.updater}${g.task ? ` (${g.task})` : ''}: ${g.state === 'Unknown' ? 'UNKNOWN state, it may be partly updated: check or replace the machine' : 'not started, the machine was not touched'}`,
      );
  }
  const owners = cond(plan.status?.conditions, 'OwnersAligned');
  if (owners?.status === 'False') {
    out.push('', `Owners: OwnersAligned=False ${owners.reason ?? ''}`);
    for (const p of (owners.message ?? '').split('; ').filter((x) => x)) out.push(`  - ${p}`);
  }
  return out;
}

/** The plan list of `inplace status` without a name: one line per plan, newest last within a namespace. */
export function renderPlanList(
  plans: readonly (InPlaceUpdatePlan & KubeObject)[],
  now: Date,
  o: { allNamespaces: boolean; width?: number },
): string {
  const sorted = [...plans].sort(
    (a, b) =>
      (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') ||
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
      (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''),
  );
  const rows = sorted.map((p) => {
    const failed = cond(p.status?.conditions, ConditionTypes.failed);
    const ready = cond(p.status?.conditions, ConditionTypes.ready);
    const shown = failed?.status === 'True' ? failed : ready;
    const end = planEnd(p);
    return [
      ...(o.allNamespaces ? [p.metadata.namespace ?? ''] : []),
      p.metadata.name ?? '',
      p.spec?.clusterName ?? '',
      end === 'invalid' ? 'invalid' : (p.status?.updateStatus ?? 'pending') + (p.spec?.paused ? ' (paused)' : ''),
      p.status?.progress ?? '',
      shown?.reason ?? '',
      humanAge(p.metadata.creationTimestamp, now),
      shown?.status === 'True' && shown === ready ? '' : (shown?.message ?? ''),
    ].map(safeText);
  });
  const head = [...(o.allNamespaces ? ['NAMESPACE'] : []), 'NAME', 'CLUSTER', 'STATUS', 'PROGRESS', 'REASON', 'AGE', 'MESSAGE'];
  const widths = head.slice(0, -1).map((h, i) => Math.max(h.length, ...rows.map((r) => [...r[i]!].length)));
  const width = o.width ?? 200;
  return (
    [head, ...rows]
      .map((r) => {
        const left = r
          .slice(0, -1)
          .map((c, i) => c + ' '.repeat(widths[i]! - [...c].length))
          .join('  ');
        const room = Math.max(MIN_MESSAGE_ROOM, width - [...left].length - 2);
        const msg = r[r.length - 1]!;
        return `${left}  ${[...msg].length > room ? `${[...msg].slice(0, room - 1).join('')}…` : msg}`.trimEnd();
      })
      .join('\n') + '\n'
  );
}
