// The dashboard page: reads the server's event stream (campaign and plan views, computed server-side from its
// informers) and lays them out: campaigns -> waves -> clusters -> plans -> machines, with what holds each and why
// each failure failed, and a uPlot chart of each campaign's progress. Plain DOM, no framework, no build step.
// The stream is read with fetch (not EventSource) so that a bearer token can go in the Authorization header.
/* global document, window, sessionStorage, fetch, Node, TextDecoder, URLSearchParams, uPlot */

const TOKEN_KEY = 'inplace-dashboard-token';
const campaigns = new Map(); // key -> { view, points, el, chart }
const standalone = new Map(); // namespace -> plan views
const open = new Set(); // plan keys (ns/name) whose details are shown
let machinesWatched = false;

const $ = (id) => document.getElementById(id);

/** Creates an element; strings become text nodes (never HTML). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'onclick') el.addEventListener('click', v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}
function headers() {
  const t = sessionStorage.getItem(TOKEN_KEY);
  return t ? { Authorization: `Bearer ${t}` } : {};
}

function setConn(state, text) {
  $('conn').dataset.state = state;
  $('conn').textContent = text;
}

/** Reads the event stream; reconnects after a drop. */
async function connect(attempt = 0) {
  let res;
  try {
    res = await fetch('/api/events', { headers: headers(), cache: 'no-store' });
  } catch {
    return retry(attempt);
  }
  if (res.status === 401) {
    setConn('denied', 'sign in');
    $('login').hidden = false;
    return;
  }
  if (!res.ok || !res.body) {
    setConn('lost', `error ${res.status}`);
    return retry(attempt);
  }
  $('login').hidden = true;
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch {
      break;
    }
    if (chunk.done) break;
    buf += dec.decode(chunk.value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length) onEvent(event, JSON.parse(data.join('\n')));
    }
  }
  setConn('lost', 'reconnecting…');
  retry(0);
}

function retry(attempt) {
  setConn('lost', 'reconnecting…');
  window.setTimeout(() => void connect(attempt + 1), Math.min(500 * 2 ** attempt, 10_000));
}

function onEvent(event, d) {
  if (event === 'hello') {
    $('viewer').textContent = `viewing as ${d.viewer}`;
    machinesWatched = d.machines;
  } else if (event === 'synced') {
    setConn('live', 'live');
    document.body.dataset.synced = 'true';
  } else if (event === 'campaign') {
    let c = campaigns.get(d.key);
    if (!c) campaigns.set(d.key, (c = { points: [] }));
    c.view = d.view;
    c.plansVisible = d.plansVisible;
    c.points = d.replacePoints ? d.points : c.points.concat(d.points);
    renderCampaign(d.key, c);
  } else if (event === 'campaign-removed') {
    const c = campaigns.get(d.key);
    c?.chart?.destroy();
    c?.el?.remove();
    campaigns.delete(d.key);
  } else if (event === 'plans') {
    if (d.plans.length) standalone.set(d.namespace, d.plans);
    else standalone.delete(d.namespace);
    renderStandalone();
  }
  $('empty').hidden = campaigns.size > 0 || standalone.size > 0;
}

const badge = (state) => h('span', { class: 'badge', 'data-state': state }, state);
const ago = (iso) => {
  if (!iso) return '';
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
  return s < 90 ? `${s}s ago` : s < 5400 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
};

function renderCampaign(key, c) {
  const v = c.view;
  if (!c.el) {
    c.el = h('section', { class: 'campaign', 'data-campaign': key });
    c.head = h('div');
    c.chartEl = h('div', { class: 'chart' });
    c.body = h('div');
    c.el.append(c.head, c.chartEl, c.body);
    const all = [...campaigns.keys()].sort();
    const next = all.slice(all.indexOf(key) + 1).find((k) => campaigns.get(k)?.el);
    $('campaigns').insertBefore(c.el, next ? campaigns.get(next).el : null);
  }
  c.el.dataset.state = v.updateStatus;
  const cl = v.clusters;
  c.head.replaceChildren(
    h('h2', {}, `${v.namespace}/${v.name}`, badge(v.updateStatus), h('span', { class: 'badge phase' }, v.phase || '…')),
    h(
      'div',
      { class: 'summary' },
      `clusters ${v.progress || '0/0'} done (${cl.updated ?? 0} updated, ${cl.skipped ?? 0} at target, ${cl.failed ?? 0} failed of a budget of ${v.failureBudget}, ${cl.updating ?? 0} updating, ${cl.pending ?? 0} pending) · machines ${v.machineProgress || '0/0'}`,
      v.currentWave !== undefined && v.plannedWaves !== undefined
        ? ` · wave ${v.currentWave} of ${Math.max(0, v.plannedWaves - 1)} after the canaries`
        : '',
    ),
    v.gate ? h('div', { class: 'gate', 'data-gate': 'campaign' }, `held: ${v.gate}`) : h('div', { class: 'summary reason' }, v.message),
    v.failedClusters.length
      ? h(
          'ul',
          { class: 'failures' },
          v.failedClusters.map((f) => h('li', { 'data-cluster': f.name }, `${f.name} (wave ${f.wave ?? '?'}) failed: ${f.reason ?? ''}`)),
        )
      : '',
  );
  renderChart(c);
  const byWave = new Map();
  for (const p of v.plans) {
    const w = p.wave ?? 0;
    if (!byWave.has(w)) byWave.set(w, []);
    byWave.get(w).push(p);
  }
  const waves = v.waves.length
    ? v.waves
    : [...byWave.keys()].map((i) => ({ index: i, label: i === 0 ? 'canary' : `wave ${i}`, clusters: 0 }));
  c.body.replaceChildren(
    ...waves.map((w) => {
      const ps = byWave.get(w.index) ?? [];
      return h(
        'div',
        { class: 'wave', 'data-wave': w.index },
        h(
          'h3',
          {},
          `${w.label}: ${w.clusters} clusters, ${w.updated ?? 0} updated, ${w.failed ?? 0} failed, ${w.updating ?? 0} updating`,
          w.completionTime ? ` — done ${ago(w.completionTime)}` : '',
        ),
        c.plansVisible === false ? h('div', { class: 'pending-note' }, 'you may not list the plans of this namespace') : '',
        h('div', { class: 'clusters' }, ps.map(clusterChip)),
        ps.filter((p) => open.has(`${p.namespace}/${p.name}`)).map(planDetail),
      );
    }),
    cl.pending ? h('div', { class: 'pending-note' }, `${cl.pending} clusters not started yet (next waves)`) : '',
  );
}

function clusterChip(p) {
  const key = `${p.namespace}/${p.name}`;
  const title = [p.failure, p.gate].filter(Boolean).join(' · ') || `${p.state}: ${p.updated}/${p.machines} machines`;
  return h(
    'button',
    {
      class: 'cluster',
      type: 'button',
      'data-cluster': p.cluster,
      'data-plan': key,
      'data-state': p.state,
      'data-held': p.gate ? true : undefined,
      title,
      'aria-expanded': open.has(key) ? 'true' : 'false',
      onclick: () => {
        if (open.has(key)) open.delete(key);
        else open.add(key);
        rerenderAll();
      },
    },
    p.cluster,
    h('span', { class: 'progress' }, `${p.updated}/${p.machines}`),
  );
}

function planDetail(p) {
  const key = `${p.namespace}/${p.name}`;
  const machines = h('div', { class: 'machines' });
  if (machinesWatched) void loadMachines(p, machines);
  return h(
    'div',
    { class: 'detail', 'data-detail': key },
    h('div', {}, h('strong', {}, `InPlaceUpdatePlan ${key}`), badge(p.state), p.startTime ? ` started ${ago(p.startTime)}` : ''),
    p.gate ? h('div', { class: 'gate', 'data-gate': 'plan' }, `held: ${p.gate}`) : '',
    p.failure ? h('div', { class: 'msg', 'data-failure': key }, `failed: ${p.failure}`) : '',
    h(
      'table',
      {},
      h('tr', {}, h('th', {}, 'target'), h('th', {}, 'status'), h('th', {}, 'machines'), h('th', {}, '')),
      p.targets.map((t) =>
        h(
          'tr',
          {},
          h('td', {}, `${t.kind}/${t.name}`),
          h('td', {}, badge(t.state)),
          h('td', {}, `${t.updated}/${t.machines}${t.updating ? `, ${t.updating} updating` : ''}${t.failed ? `, ${t.failed} failed` : ''}`),
          h('td', { class: 'msg' }, t.message ?? ''),
        ),
      ),
    ),
    machines,
  );
}

async function loadMachines(p, el) {
  const q = new URLSearchParams({ namespace: p.namespace, plan: p.name });
  const res = await fetch(`/api/machines?${q}`, { headers: headers(), cache: 'no-store' });
  if (!res.ok) {
    el.textContent = res.status === 403 ? 'you may not list the MachineUpdates of this namespace' : `machines: error ${res.status}`;
    return;
  }
  const ms = await res.json();
  el.replaceChildren(
    ms.length
      ? h(
          'table',
          {},
          h('tr', {}, h('th', {}, 'machine'), h('th', {}, 'target'), h('th', {}, 'status'), h('th', {}, 'updater'), h('th', {}, '')),
          ms.map((m) =>
            h(
              'tr',
              { 'data-machine': m.machine },
              h('td', {}, m.machine),
              h('td', {}, m.target),
              h('td', {}, badge(m.state)),
              h('td', {}, m.updater ?? ''),
              h('td', { class: 'msg' }, m.state === 'failed' ? (m.message ?? '') : ''),
            ),
          ),
        )
      : h('span', { class: 'pending-note' }, 'no machine in update yet'),
  );
}

function renderChart(c) {
  const v = c.view;
  if (!window.uPlot) return; // the deferred library is not there yet: the next update draws it
  const pts = c.points;
  if (pts.length < 2 && !c.chart) {
    c.chartEl.textContent = 'the plot starts with the first progress';
    return;
  }
  if (!c.chart) c.chartEl.textContent = '';
  const data = [
    pts.map((p) => p.t / 1000),
    pts.map((p) => p.machinesUpdated),
    pts.map((p) => p.clustersDone),
    pts.map((p) => p.clustersFailed),
    pts.map(() => v.failureBudget),
  ];
  if (!c.chart) {
    const width = Math.max(320, Math.min(900, c.el.clientWidth - 32));
    c.chart = new uPlot(
      {
        width,
        height: 200,
        scales: {
          x: { time: true },
          m: { range: () => [0, Math.max(1, c.view.machinesTotal)] },
          c: { range: () => [0, Math.max(1, c.view.clustersSelected)] },
        },
        axes: [{}, { scale: 'm', label: 'machines' }, { scale: 'c', side: 1, label: 'clusters', grid: { show: false } }],
        series: [
          {},
          { label: 'machines updated', scale: 'm', stroke: '#1565c0', width: 2 },
          { label: 'clusters done', scale: 'c', stroke: '#2e7d32', width: 2 },
          { label: 'clusters failed', scale: 'c', stroke: '#c62828', width: 2 },
          { label: 'failure budget', scale: 'c', stroke: '#ef6c00', dash: [6, 4], width: 1, points: { show: false } },
        ],
      },
      data,
      c.chartEl,
    );
  } else c.chart.setData(data);
}

function renderStandalone() {
  $('standalone').hidden = standalone.size === 0;
  $('plans').replaceChildren(
    ...[...standalone.keys()].sort().map((ns) =>
      h(
        'div',
        { class: 'plan-card', 'data-namespace': ns },
        h('h3', {}, `namespace ${ns}`),
        h('div', { class: 'clusters' }, standalone.get(ns).map(clusterChip)),
        standalone
          .get(ns)
          .filter((p) => open.has(`${p.namespace}/${p.name}`))
          .map(planDetail),
      ),
    ),
  );
}

function rerenderAll() {
  for (const [k, c] of campaigns) renderCampaign(k, c);
  renderStandalone();
}

$('login').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
  void connect();
});
// The chart library loads deferred; draw the charts once it is there.
window.addEventListener('load', () => rerenderAll());
void connect();
