#!/usr/bin/env bash
# A conformant updater in bash with kubectl only (no SDK, no jq): language independence of the updater contract
# (docs/contract.md). It serves generic UpdaterUpdateTasks of one updater name:
#   - parameters.durationSeconds (default 0): simulated work, measured from status.startTime (restart-safe, C7);
#     a value that is not a number of seconds from 0 to 31536000 fails the task, saying why (bad input never improves)
#   - parameters.failWith: fail with that message after the duration (C6)
#   - spec.updatePhase aborting: report aborted (C4)
# Every status write goes through /status, carries observedGeneration (C5) and a Ready condition (C6), and is
# guarded by the resourceVersion it read (a conflict is simply retried on the next pass). Terminal tasks are
# never changed except to let observedGeneration follow a newer generation (C4, C5).
#
# A real updater would watch (kubectl get -w) instead of polling; polling keeps this example short.
#
# Usage: shell-updater.sh --name <updater-name> [--namespace NS] [--kubeconfig FILE] [--interval SECONDS] [--once]
set -u

NAME=""
NAMESPACE=""
INTERVAL=1
ONCE=0
KUBECTL=(kubectl)
while [ $# -gt 0 ]; do
  case "$1" in
    --name) NAME="$2"; shift 2 ;;
    --namespace|-n) NAMESPACE="$2"; shift 2 ;;
    --kubeconfig) KUBECTL+=(--kubeconfig "$2"); shift 2 ;;
    --interval) INTERVAL="$2"; shift 2 ;;
    --once) ONCE=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [ -z "$NAME" ]; then echo "--name is required" >&2; exit 2; fi
if [ -n "$NAMESPACE" ]; then NS_ARGS=(-n "$NAMESPACE"); else NS_ARGS=(--all-namespaces); fi

RESOURCE=updaterupdatetasks.inplace.cluster.x-k8s.io
SELECTOR="inplace.cluster.x-k8s.io/updater-name=$NAME"
# "|"-separated (a whitespace IFS would merge empty fields); failWith comes last so it may contain "|".
FIELDS='{range .items[*]}{.metadata.namespace}{"|"}{.metadata.name}{"|"}{.metadata.resourceVersion}{"|"}{.metadata.generation}{"|"}{.spec.updatePhase}{"|"}{.status.updateStatus}{"|"}{.status.observedGeneration}{"|"}{.status.startTime}{"|"}{.spec.parameters.durationSeconds}{"|"}{.spec.parameters.failWith}{"\n"}{end}'

log() { echo "shell-updater[$NAME]: $*" >&2; }
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
# startTime / completionTime to the microsecond (metav1.MicroTime layout): a duration measured from a start cut to
# the second ends up to a second early.
stamp() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }
# JSON string escaping for messages (backslash, quote, control characters become spaces).
json_str() { printf '%s' "$1" | tr '\t\r\n' '   ' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'; }

# patch_status <namespace> <name> <resourceVersion> <status JSON>
patch_status() {
  "${KUBECTL[@]}" patch "$RESOURCE" "$2" -n "$1" --subresource=status --type=merge \
    -p "{\"metadata\":{\"resourceVersion\":\"$3\"},\"status\":$4}" >/dev/null 2>&1 \
    || log "status write of $1/$2 did not go through (will retry)"
}

# ready <True|False> <Reason> <message> <generation> -> the conditions JSON
ready() {
  printf '[{"type":"Ready","status":"%s","reason":"%s","message":"%s","observedGeneration":%s,"lastTransitionTime":"%s"}]' "$1" "$2" "$(json_str "$3")" "$4" "$(now)"
}

reconcile() { # one task, the fields $FIELDS prints
  local ns="$1" name="$2" rv="$3" gen="$4" phase="${5:-updating}" st="$6" og="$7" start="$8" dur="${9:-0}" failwith="${10:-}"
  case "$st" in
    updated|failed|aborted)
      if [ "${og:-0}" -lt "$gen" ]; then patch_status "$ns" "$name" "$rv" "{\"observedGeneration\":$gen}"; fi
      return ;;
  esac
  local t; t="$(stamp)"
  # Bad input is failed at once, with the reason (docs/contract.md, C4): retrying would not make it better.
  if ! [[ "$dur" =~ ^[0-9]+([.][0-9]+)?$ ]] || awk -v d="$dur" 'BEGIN { exit !(d > 31536000) }'; then
    log "$ns/$name: failed: bad durationSeconds $dur"
    patch_status "$ns" "$name" "$rv" "{\"updateStatus\":\"failed\",\"observedGeneration\":$gen,\"startTime\":\"${start:-$t}\",\"completionTime\":\"$t\",\"conditions\":$(ready False InvalidParameters "parameters.durationSeconds must be a number of seconds from 0 to 31536000, got $dur" "$gen")}"
    return
  fi
  if [ "$phase" = "aborting" ]; then
    log "$ns/$name: aborting"
    patch_status "$ns" "$name" "$rv" "{\"updateStatus\":\"aborted\",\"observedGeneration\":$gen,\"startTime\":\"${start:-$t}\",\"completionTime\":\"$t\",\"conditions\":$(ready False Aborted "aborted by the shell updater before it finished" "$gen")}"
    return
  fi
  if [ -z "$start" ] || [ "$st" != "updating" ] || [ "${og:-0}" -lt "$gen" ]; then
    log "$ns/$name: updating (${dur}s)"
    patch_status "$ns" "$name" "$rv" "{\"updateStatus\":\"updating\",\"observedGeneration\":$gen,\"startTime\":\"${start:-$t}\",\"conditions\":$(ready False Updating "shell updater working for ${dur}s" "$gen")}"
    return
  fi
  local elapsed; elapsed="$(awk -v a="$(date -u +%s.%N)" -v b="$(date -u -d "$start" +%s.%N)" 'BEGIN { printf "%.3f", a - b }')"
  if awk -v e="$elapsed" -v d="$dur" 'BEGIN { exit !(e < d) }'; then return; fi
  if [ -n "$failwith" ]; then
    log "$ns/$name: failed: $failwith"
    patch_status "$ns" "$name" "$rv" "{\"updateStatus\":\"failed\",\"observedGeneration\":$gen,\"completionTime\":\"$t\",\"conditions\":$(ready False Failed "$failwith" "$gen")}"
  else
    log "$ns/$name: updated"
    patch_status "$ns" "$name" "$rv" "{\"updateStatus\":\"updated\",\"observedGeneration\":$gen,\"completionTime\":\"$t\",\"conditions\":$(ready True Updated "shell updater finished after ${elapsed}s" "$gen")}"
  fi
}

log "serving $RESOURCE with $SELECTOR"
while true; do
  if out="$("${KUBECTL[@]}" get "$RESOURCE" "${NS_ARGS[@]}" -l "$SELECTOR" -o jsonpath="$FIELDS" 2>/dev/null)"; then
    while IFS='|' read -r ns name rv gen phase st og start dur failwith; do
      [ -n "$name" ] && reconcile "$ns" "$name" "$rv" "$gen" "$phase" "$st" "$og" "$start" "$dur" "$failwith"
    done <<< "$out"
  else
    log "listing tasks failed (will retry)"
  fi
  [ "$ONCE" = 1 ] && exit 0
  sleep "$INTERVAL"
done
