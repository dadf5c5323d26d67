// What the MHC extension remembers between passes so that a pass costs what changed, not what is in flight: the
// per-machine steps of a decision (decide.ts PassHooks) by the identity of their inputs. The informers' objects are
// frozen and replaced on every change (src/runtime/store.ts), so an unchanged Machine with the same MachineUpdate and
// MHC timeouts has the same verdict basis and, at the same deadline, the same protect action. The clock is never
// remembered: each verdict is re-judged at the pass's time (verdictAt), so a timeout expires when its time comes. Only
// frozen objects are remembered (an object a caller may still mutate is computed afresh), and forgetting everything
// (a restart) decides the same. No I/O.
import {
  directHooks,
  protectAction,
  readMhcConfig,
  verdictAt,
  verdictBasis,
  type Judged,
  type MachineAction,
  type MhcConfig,
  type PassHooks,
  type Verdict,
  type VerdictBasis,
} from './decide.js';
import type { Machine, MachineHealthCheck, MachineUpdate } from './scope.js';

/** A machine's remembered verdict basis, valid for this update and these timeouts, with its last protect action. */
interface MachineMemo {
  u: MachineUpdate;
  inPlaceMs: number;
  nodeStartupTimeoutSeconds: number | undefined;
  basis: VerdictBasis;
  protect?: { mhcName: string; expiresAtMs: number; timeoutMs: number; action: MachineAction };
}

/** PassHooks that remember their results by the identity of the objects they were computed from (see the header). */
export class DecisionMemo implements PassHooks {
  private readonly machines = new WeakMap<Machine, MachineMemo>();
  private readonly configs = new WeakMap<MachineHealthCheck, Map<number, MhcConfig>>();

  /** readMhcConfig, remembered per MHC object and machine count (a pass and the event mapper ask with different counts). */
  config(mhc: MachineHealthCheck, expected: number): MhcConfig {
    if (!Object.isFrozen(mhc)) return readMhcConfig(mhc, expected);
    let byCount = this.configs.get(mhc);
    const seen = byCount?.get(expected);
    if (seen) return seen;
    const config = readMhcConfig(mhc, expected);
    // A few counts per MHC object at most (the fleet's size moves slowly); bounded all the same.
    if (!byCount || byCount.size >= 8) this.configs.set(mhc, (byCount = new Map()));
    byCount.set(expected, config);
    return config;
  }

  /** judge, from a basis remembered per Machine object (valid while its update and the timeouts are the same). */
  verdict(m: Machine, u: MachineUpdate, inPlaceMs: number, nodeStartupTimeoutSeconds: number | undefined, nowMs: number): Verdict {
    if (!Object.isFrozen(m) || !Object.isFrozen(u)) return directHooks.verdict(m, u, inPlaceMs, nodeStartupTimeoutSeconds, nowMs);
    let memo = this.machines.get(m);
    if (!memo || memo.u !== u || memo.inPlaceMs !== inPlaceMs || memo.nodeStartupTimeoutSeconds !== nodeStartupTimeoutSeconds) {
      memo = { u, inPlaceMs, nodeStartupTimeoutSeconds, basis: verdictBasis(m, u, inPlaceMs, nodeStartupTimeoutSeconds) };
      this.machines.set(m, memo);
    }
    return verdictAt(memo.basis, nowMs);
  }

  /** protectAction, remembered per Machine object for its update, the MHC's name and the deadline. */
  protect(j: Judged, verdict: Extract<Verdict, { kind: 'within' }>, mhcName: string): MachineAction {
    const memo = this.machines.get(j.m);
    if (!memo || memo.u !== j.u) return protectAction(j, verdict, mhcName);
    const p = memo.protect;
    if (p && p.mhcName === mhcName && p.expiresAtMs === verdict.expiresAtMs && p.timeoutMs === verdict.timeoutMs) return p.action;
    const action = protectAction(j, verdict, mhcName);
    memo.protect = { mhcName, expiresAtMs: verdict.expiresAtMs, timeoutMs: verdict.timeoutMs, action };
    return action;
  }
}
