// SPDX-License-Identifier: MIT
// brooq console: a small page over the gateway's JSON API (docs/console.md). No framework, no
// inline script, no innerHTML with data: every text goes through textContent.
'use strict';

(function () {
  const API = '/console/api/';
  const STATES = ['pending', 'failed', 'processing', 'done', 'dead', 'canceled'];
  const TERMINAL = ['done', 'dead', 'canceled'];
  let session = null; // {role, read_only, csrf, token_fp, expires_at_ms, expires_at}
  let viewGen = 0;    // bumped by route(): a view's refresh loop ends when it changes
  let viewPoll = null; // the current view's refresh loop (poll()), if it has one
  let expired = false; // the session ended under an open view: it is kept for after sign-in
  let keptRole = null; // the role of that session: the view is kept for the same role only

  const $ = (id) => document.getElementById(id);

  // ---- shown text ------------------------------------------------------------------------
  // Bidi controls in job data would reorder what is shown around them (an RLO makes
  // "gpj.exe" read "exe.jpg"): every text the page shows has them written out as \u202E.
  const BIDI = /[\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
  function shown(s) {
    return String(s).replace(BIDI, (c) => '\\u' + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0'));
  }

  // el('td', {class: 'num'}, 'text', childNode, ...). Texts (kids, title, aria-label) go
  // through shown(); data-* attributes keep the value as it is, for lookups.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === null || v === undefined) continue;
      if (k === 'on') { for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn); }
      else if (k === 'title' || k === 'aria-label') e.setAttribute(k, shown(v));
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : shown(k));
    return e;
  }

  // Sets an element's text only when it changed: a redraw that writes the same text
  // would still drop a selection inside it.
  function setText(e, text) {
    const t = shown(text);
    if (e.textContent !== t) e.textContent = t;
  }

  // A long value in one line, cut with an ellipsis: the whole (up to max characters) in
  // its title for the mouse, and shown in full while it has the focus (Tab reaches it).
  function clip(value, cls, max) {
    const v = String(value);
    const title = v.length > (max || 2000) ? v.slice(0, max || 2000) + '…' : v;
    return el('span', { class: 'clip ' + (cls || ''), tabindex: '0', title }, v);
  }

  // ---- one refresh loop per view ---------------------------------------------------------
  // fn runs now and then every ms while the view that started it is shown and the
  // session lasts; it returns false to stop (a finished job). now() runs it at once
  // (after an action) without starting a second loop: there is one timer, and a run
  // asked for during a run happens right after it.
  function poll(fn, ms) {
    const gen = viewGen;
    let t = null, running = false, again = false;
    async function tick() {
      clearTimeout(t);
      t = null;
      if (gen !== viewGen || !session) return;
      if (running) { again = true; return; }
      running = true;
      let go = true;
      try { go = (await fn()) !== false; } catch (e) { go = true; }
      running = false;
      if (gen !== viewGen || !session) return;
      if (again) { again = false; tick(); return; }
      if (go && t === null) t = setTimeout(tick, ms);
    }
    const p = { now: tick, gen };
    viewPoll = p;
    tick();
    return p;
  }

  function say(text) { $('status').textContent = text; }

  class ApiError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  // GET with params in the query, POST with a form body and the CSRF header.
  async function api(path, params, method) {
    method = method || 'GET';
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v !== '' && v !== null && v !== undefined) q.append(k, v);
    const opts = { method, credentials: 'same-origin', headers: {} };
    let url = API + path;
    if (method === 'GET') { if ([...q].length) url += '?' + q.toString(); }
    else {
      opts.body = q.toString();
      opts.headers['Content-Type'] = 'application/x-www-form-urlencoded';
      if (session) opts.headers['X-CSRF-Token'] = session.csrf;
    }
    const res = await fetch(url, opts);
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (res.status === 401 && path !== 'login') { sessionEnded(); throw new ApiError(401, 'signed out'); }
    // Errors are the protocol's error reply in JSON: {code, msg} (docs/protocol.md §11).
    if (!res.ok) throw new ApiError(res.status, (body && body.msg) || res.statusText);
    return body;
  }

  // An age or duration in ms (every duration of the JSON form is an integer of ms).
  function fmtAge(ms) {
    if (ms === null || ms === undefined) return '—';
    const s = ms / 1000;
    if (s < 1) return '< 1 s';
    if (s < 120) return Math.round(s) + ' s';
    if (s < 7200) return Math.round(s / 60) + ' min';
    return (s / 3600).toFixed(1) + ' h';
  }
  function fmtRate(r) { return r === null || r === undefined ? '—' : (r < 10 ? r.toFixed(1) : Math.round(r)); }
  function fmtTime(ms) { return ms === null || ms === undefined ? '—' : new Date(ms).toISOString().replace('T', ' ').replace('Z', ' UTC'); }
  function stateBadge(s) { return el('span', { class: 'badge st-' + s }, s); }

  function view(title) {
    const v = $('view');
    v.replaceChildren(el('h1', { id: 'view-title' }, title));
    v.setAttribute('aria-labelledby', 'view-title');
    return v;
  }

  function notAvailable(v, e, what) {
    if (e.status === 501) {
      v.append(el('p', { class: 'note' }, what + ' is not available in this gateway yet (' + e.message + ').'));
      return true;
    }
    return false;
  }

  // ---- session ----------------------------------------------------------------------------

  function signedOut() {
    session = null;
    expired = false;
    viewGen++;
    $('nav').hidden = true;
    $('who').hidden = true;
    $('view').hidden = true;
    $('signin-note').textContent = '';
    $('signin').hidden = false;
    $('token').value = '';
  }

  // A request answered 401 while signed in: the session expired (or was revoked). Says
  // so, and keeps the view as it is (a half-filled form included), hidden until the
  // next sign-in shows it again.
  function sessionEnded() {
    if (!session) return;
    keptRole = session.role;
    session = null;
    expired = true;
    $('nav').hidden = true;
    $('who').hidden = true;
    $('view').hidden = true;
    $('signin-note').textContent = 'Your session has ended (expired or revoked). Sign in again to go on: ' +
      'the page you were on, and what you typed in it, is kept.';
    $('signin').hidden = false;
    $('token').value = '';
  }

  function signedIn(s) {
    session = s;
    $('signin').hidden = true;
    $('signin-note').textContent = '';
    $('nav').hidden = false;
    $('who').hidden = false;
    $('view').hidden = false;
    const role = $('role');
    role.replaceChildren('Signed in: ' + s.role + ' (token ' + s.token_fp + ')');
    if (s.read_only) role.append(' ', el('span', { class: 'badge ro' }, 'read-only'));
    // After an expiry the kept view goes on where it was (its loop, if any, runs again).
    if (expired && keptRole === s.role && $('view').childElementCount > 0) {
      expired = false;
      if (viewPoll && viewPoll.gen === viewGen) viewPoll.now();
      return;
    }
    expired = false;
    route();
  }

  async function signIn(ev) {
    ev.preventDefault();
    const err = $('signin-error');
    err.textContent = '';
    try {
      const s = await api('login', { token: $('token').value }, 'POST');
      $('token').value = '';
      signedIn(s);
      $('main').focus();
    } catch (e) {
      err.textContent = e.status === 401 ? 'Sign-in refused: unknown token.' : 'Sign-in failed: ' + e.message;
      $('token').focus();
    }
  }

  async function signOut() {
    try { await api('logout', {}, 'POST'); } catch (e) { /* signed out either way */ }
    signedOut();
    $('token').focus();
  }

  // ---- overview ---------------------------------------------------------------------------

  async function overview() {
    const v = view('Overview');
    const note = el('p', { class: 'note', id: 'ov-note', role: 'status' }, 'Loading…');
    const wrap = el('div', { class: 'scroll', role: 'region', 'aria-label': 'Topics', tabindex: '0' });
    v.append(findJobForm(), note, wrap);
    const ov = { table: null, rows: new Map(), meta: null, note, wrap, lastOk: null };
    const loop = poll(() => overviewRefresh(ov), 2000);
    ov.loop = loop;
  }

  // One refresh of the overview: the topics' settings (pause, limits) and the figures,
  // written into the table in place (a focused Pause button stays focused).
  async function overviewRefresh(ov) {
    try {
      const t = await api('topics');
      ov.meta = new Map(t.topics.map((x) => [x.topic, x]));
    } catch (e) { if (e.status === 401) return; /* 501: no policies; else the last ones stay */ }
    try {
      const o = await api('overview');
      ov.lastOk = o;
      if (!ov.table) { ov.table = overviewTable(); ov.wrap.replaceChildren(ov.table); }
      overviewRows(ov, o);
      overviewNote(ov.note, o, null);
    } catch (e) {
      if (e.status !== 401) overviewNote(ov.note, ov.lastOk, e);
    }
  }

  // What the figures are worth: their age when the database is away or the monitor is
  // late (never a fresh "Updated" time over old counts), the rate window, estimates.
  function overviewNote(note, o, err) {
    note.classList.remove('stale');
    if (!o) { setText(note, 'Refresh failed: ' + (err ? err.message : '')); note.classList.add('stale'); return; }
    const age = o.counted_at_ms === null ? null : Math.max(0, o.at_ms - o.counted_at_ms);
    const parts = [];
    if (err) {
      parts.push('Refresh failed (' + err.message + '): data from ' + fmtTime(o.at_ms) + '.');
    } else if (!o.database_up) {
      parts.push(age === null ? 'No data yet: database unreachable.' : 'Data from ' + fmtAge(age) + ' ago, database unreachable.');
    } else if (age === null) {
      parts.push('Waiting for the monitor’s first count.');
    } else if (age > 10000) {
      parts.push('Data from ' + fmtAge(age) + ' ago: the monitor’s count is late.');
    } else {
      parts.push('Updated ' + fmtTime(o.counted_at_ms) + '.');
    }
    if (err || !o.database_up || age === null || age > 10000) note.classList.add('stale');
    parts.push('Depth from the monitor’s last count' + (o.terminal_estimated ? '; ≈ marks done, dead and canceled counts estimated from a sample of the table' : '') +
      '; rates over the last ' + (o.rate_window_ms === null ? '— (measuring)' : Math.round(o.rate_window_ms / 1000) + ' s') + '.');
    setText(note, parts.join(' '));
  }

  const OV_COLS = [...STATES, 'Oldest ready', 'Started / min', 'Finished / min'];

  function overviewTable() {
    const head = el('tr', {},
      el('th', { scope: 'col' }, 'Topic'),
      ...OV_COLS.map((c) => el('th', { scope: 'col', class: 'num' }, c)),
      el('th', { scope: 'col' }, 'Status'));
    return el('table', { id: 'topics', class: 'cards' }, el('caption', {}, 'Jobs per topic and state'),
      el('thead', {}, head), el('tbody', {}));
  }

  // The rows, keyed by topic: cells are updated, rows added and removed, never redrawn.
  function overviewRows(ov, o) {
    const tbody = ov.table.tBodies[0];
    const seen = new Set();
    for (const t of o.topics) {
      seen.add(t.topic);
      let r = ov.rows.get(t.topic);
      if (!r) { r = overviewRow(t.topic); ov.rows.set(t.topic, r); }
      if (r.tr.parentNode !== tbody || r.tr !== tbody.children[seen.size - 1]) tbody.insertBefore(r.tr, tbody.children[seen.size - 1] || null);
      for (const st of STATES) {
        const est = o.terminal_estimated && TERMINAL.includes(st);
        setText(r.cells[st], (est ? '≈ ' : '') + t[st]);
        if (est) r.cells[st].title = 'estimated from a sample of the table'; else r.cells[st].removeAttribute('title');
      }
      setText(r.cells.age, fmtAge(t.oldest_ready_age_ms));
      setText(r.cells.started, fmtRate(t.started_per_min));
      setText(r.cells.finished, fmtRate(t.finished_per_min));
      overviewStatus(ov, r, t.topic);
    }
    for (const [topic, r] of ov.rows) if (!seen.has(topic)) { r.tr.remove(); ov.rows.delete(topic); }
    const empty = tbody.querySelector('tr.empty');
    if (!o.topics.length && !empty) tbody.append(el('tr', { class: 'empty' }, el('td', { colspan: 11 }, 'No topics yet.')));
    if (o.topics.length && empty) empty.remove();
  }

  function overviewRow(topic) {
    const cells = {};
    const tds = STATES.map((s) => (cells[s] = el('td', { class: 'num', 'data-state': s, 'data-label': s })));
    cells.age = el('td', { class: 'num', 'data-label': 'Oldest ready' });
    cells.started = el('td', { class: 'num', 'data-label': 'Started / min' });
    cells.finished = el('td', { class: 'num', 'data-label': 'Finished / min' });
    cells.status = el('td', { class: 'status-cell', 'data-label': 'Status' });
    const tr = el('tr', { 'data-topic': topic },
      el('th', { scope: 'row', class: 'topic' }, el('a', { href: '#/jobs?topic=' + encodeURIComponent(topic), title: topic }, topic)),
      ...tds, cells.age, cells.started, cells.finished, cells.status);
    return { tr, cells, state: null };
  }

  // Pause state, limits and the Pause/Resume button: redrawn only when they change.
  function overviewStatus(ov, r, topic) {
    if (!ov.meta) return;
    // Only paused or limited topics are listed: any other topic is neither.
    const m = ov.meta.get(topic) || { topic, paused: false, max_running: null, rate_per_s: null };
    const key = [m.paused, m.max_running, m.rate_per_s, !!(session && !session.read_only)].join('/');
    if (r.state === key) return;
    r.state = key;
    const kids = [];
    if (m.paused) kids.push(el('span', { class: 'badge paused' }, 'paused'));
    if (m.max_running) kids.push(' ≤' + m.max_running + ' running');
    if (m.rate_per_s) kids.push(' ≤' + m.rate_per_s + '/s');
    if (session && !session.read_only) {
      kids.push(' ', el('button', { type: 'button', class: 'secondary', 'aria-label': (m.paused ? 'Resume ' : 'Pause ') + topic,
        on: { click: () => pauseTopic(ov, topic, !m.paused) } }, m.paused ? 'Resume' : 'Pause'));
    }
    const had = r.cells.status.contains(document.activeElement);
    r.cells.status.replaceChildren(...kids);
    const b = r.cells.status.querySelector('button');
    if (had && b) b.focus();
  }

  async function pauseTopic(ov, topic, pause) {
    if (pause && !window.confirm('Pause topic ' + shown(topic) + '? No worker claims its jobs until it is resumed.')) return;
    try {
      await api(pause ? 'pause' : 'resume', { topic }, 'POST');
      say((pause ? 'Paused ' : 'Resumed ') + shown(topic));
      ov.loop.now(); // the view's one loop, at once: no second loop
    } catch (e) { say('Failed: ' + e.message); }
  }

  // ---- one job ----------------------------------------------------------------------------

  async function jobPage(id) {
    const v = view('Job ' + id);
    const body = el('div', { id: 'job' });
    const msg = el('p', { class: 'error', role: 'alert', id: 'job-msg' });
    const done = el('p', { id: 'job-done', role: 'status' });
    v.append(body, msg, done);
    const jp = { id, body, msg, done, f: null, state: null, shownState: null };
    let first = true;
    // A finished job does not change (but by a delete or a retry, which redraw): its
    // page stops asking.
    jp.loop = poll(async () => {
      try {
        const r = await api('job', { id });
        renderJob(jp, r.job, gatewayNow());
        return !TERMINAL.includes(r.job.state);
      } catch (e) {
        if (e.status !== 401 && first) body.replaceChildren(el('p', {}, e.status === 404 ? 'No job ' + id + '.' : 'Failed: ' + e.message));
        return e.status !== 404;
      } finally { first = false; }
    }, 3000);
  }

  // The job's fields as shown: [id, label, text]; the label of "updated" says whether
  // the job has finished.
  function jobFields(j) {
    const opt = (x) => (x === null || x === undefined ? '—' : String(x));
    return [
      ['topic', 'Topic', j.topic],
      ['attempts', 'Attempts', j.attempts + ' of ' + j.max_attempts],
      // Leases that ran out without an outcome: the crash-loop quarantine's count.
      ['lost-leases', 'Lost leases', String(j.lost_leases)],
      ['priority', 'Priority', opt(j.priority)],
      ['key', 'Idempotency key', opt(j.key)],
      ['created', 'Created', fmtTime(j.created_at_ms)],
      ['updated', TERMINAL.includes(j.state) ? 'Finished' : 'Updated', fmtTime(j.updated_at_ms)],
      ['available', 'Available at', fmtTime(j.available_at_ms)],
      ['locked-by', 'Lease holder', opt(j.locked_by)],
      ['locked-until', 'Lease until', fmtTime(j.locked_until_ms)],
      ['claimed', 'Claimed', fmtTime(j.claimed_at_ms)],
      ['attempt-deadline', 'Attempt deadline', fmtTime(j.attempt_deadline_ms)],
      ['max-execution', 'Max execution ends', fmtTime(j.max_execution_deadline_ms)],
      ['retry-of', 'Retry of', j.retry_of],
    ];
  }

  // Draws the job once, then on each refresh writes only the fields that changed, so a
  // selection or the focus inside the page survives the refresh. atMs: the gateway's
  // clock, which says whether a processing job's lease has run out.
  function renderJob(jp, j, atMs) {
    if (!jp.f) {
      const f = (jp.f = { dd: {}, dt: {} });
      const dl = el('dl', {}, el('dt', {}, 'State'), (f.state = el('dd', { id: 'job-state' })));
      for (const [id, label] of jobFields(j)) {
        dl.append((f.dt[id] = el('dt', {}, label)), (f.dd[id] = el('dd', { id: 'job-' + id })));
      }
      f.errH = el('h2', {}, 'Last error');
      f.err = el('pre', { class: 'errtext', id: 'job-error', tabindex: '0', 'aria-label': 'Last error' });
      f.acts = el('div', { class: 'actions' });
      f.resultBox = el('div', {});
      f.attempts = el('div', { id: 'job-attempts' });
      jp.body.replaceChildren(dl, f.acts, f.errH, f.err, f.attempts, el('h2', {}, 'Payload'),
        el('pre', { tabindex: '0', 'aria-label': 'Payload' }, JSON.stringify(j.payload, null, 2)), f.resultBox);
    }
    const f = jp.f;
    const note = leaseNote(j, atMs);
    const shownState = j.state + (note ? ' expired' : '');
    if (jp.shownState !== shownState) {
      f.state.replaceChildren(stateBadge(j.state), ...(note ? [note] : []));
      jp.shownState = shownState;
    }
    if (jp.state !== j.state) {
      jobActions(jp, j);
      jp.state = j.state;
    }
    for (const [id, label, text] of jobFields(j)) {
      setText(f.dt[id], label);
      if (id === 'retry-of') {
        if (text === null) setText(f.dd[id], '—');
        else if (!f.dd[id].querySelector('a')) f.dd[id].replaceChildren(el('a', { href: '#/job/' + text }, 'job ' + text));
      } else setText(f.dd[id], text);
    }
    // Errors keep their line breaks, in a block that scrolls (errors run to 64 KiB).
    setText(f.err, j.last_error === null ? '—' : j.last_error);
    if (j.result !== null && !f.resultBox.childElementCount) {
      f.resultBox.append(el('h2', {}, 'Result'), el('pre', { tabindex: '0', 'aria-label': 'Result' }, JSON.stringify(j.result, null, 2)));
    }
    // The attempts' errors change only when an attempt ends: redrawn then, not each refresh.
    const errs = j.errors ? j.errors.length + '@' + (j.errors.length ? j.errors[j.errors.length - 1].at_ms : 0) : '';
    if (jp.errs !== errs) {
      f.attempts.replaceChildren(...attemptErrors(j));
      jp.errs = errs;
    }
  }

  function jobActions(jp, j) {
    const acts = jp.f.acts;
    acts.replaceChildren();
    if (!session || session.read_only) return;
    if (!TERMINAL.includes(j.state)) {
      acts.append(el('button', { type: 'button', class: 'danger', id: 'cancel-job', on: { click: () => act(jp, 'cancel') } }, 'Cancel job'));
    }
    if (j.state === 'dead' || j.state === 'canceled') {
      acts.append(el('button', { type: 'button', id: 'retry-job', on: { click: () => act(jp, 'retry') } }, 'Retry job'));
    }
    if (TERMINAL.includes(j.state)) {
      acts.append(el('button', { type: 'button', class: 'secondary', id: 'delete-job', on: { click: () => act(jp, 'delete') } }, 'Delete job'));
    }
  }

  async function act(jp, what) {
    const id = jp.id;
    if (!window.confirm(what[0].toUpperCase() + what.slice(1) + ' job ' + id + '?')) return;
    jp.msg.textContent = '';
    jp.done.replaceChildren();
    try {
      const r = await api(what, { id }, 'POST');
      if (what === 'delete' && r.deleted) { say('Deleted job ' + id); location.hash = '#/overview'; return; }
      if (what === 'retry') {
        // One id: ids holds the new job, or the retry that already existed (retried 0).
        const n = r.ids[0];
        jp.done.append(r.retried > 0 ? 'Retried: new ' : 'Already retried: ',
          el('a', { href: '#/job/' + n, id: 'retry-link' }, 'job ' + n), r.retried > 0 ? '.' : ' (no job created).');
        say(r.retried > 0 ? 'Retried job ' + id + ' as job ' + n : 'Job ' + id + ' was already retried: job ' + n);
      } else {
        say(what + ' job ' + id + ': ' + (r.state || (r.deleted ? 'deleted' : 'done')));
      }
      jp.loop.now(); // the view's one loop, at once
    } catch (e) { jp.msg.textContent = what + ' failed: ' + e.message; }
  }

  // ---- the job list -----------------------------------------------------------------------

  // The filters live in the URL (#/jobs?topic=..&state=..&key=..&after=..&before=..): a
  // link to the page is the filtered list, and Back returns to the previous filters.
  // Times are UTC, as everywhere on the page: 2026-12-01T08:24 in a field is 08:24 UTC.
  const FILTERS = ['topic', 'state', 'key', 'after', 'before'];

  function utcToMs(v) { return v ? Date.parse(v.length === 16 ? v + ':00Z' : v + 'Z') : ''; }

  async function jobsPage(query) {
    const v = view('Jobs');
    const p = new URLSearchParams(query);
    const f = el('form', { class: 'inline', id: 'jobs-filter' },
      field('f-topic', 'Topic', el('input', { id: 'f-topic', name: 'topic', value: p.get('topic') || '' })),
      field('f-state', 'State', el('select', { id: 'f-state', name: 'state' },
        el('option', { value: '' }, 'any'), ...STATES.map((s) => el('option', { value: s, selected: p.get('state') === s }, s)))),
      field('f-key', 'Idempotency key (any topic)', el('input', { id: 'f-key', name: 'key', value: p.get('key') || '' })),
      field('f-after', 'Created after (UTC)', el('input', { id: 'f-after', name: 'after', type: 'datetime-local', value: p.get('after') || '' })),
      field('f-before', 'Created before (UTC)', el('input', { id: 'f-before', name: 'before', type: 'datetime-local', value: p.get('before') || '' })),
      el('button', { type: 'submit' }, 'Filter'));
    const out = el('div', { id: 'jobs-out' });
    // After a bulk run the list is read again in place: the view (and its progress line) stays.
    v.append(f, bulkBar(out, () => load(false)), out);
    let cursor = null;
    const load = async (more) => {
      const params = {
        topic: (p.get('topic') || '').trim(), state: p.get('state') || '', key: p.get('key') || '',
        created_after_ms: utcToMs(p.get('after')), created_before_ms: utcToMs(p.get('before')),
        limit: 50, cursor: more ? cursor : '',
      };
      try {
        const r = await api('jobs', params);
        cursor = r.next;
        renderList(out, r.jobs, more, cursor ? () => load(true) : null, gatewayNow());
        bulkRows(out, params);
      } catch (e) {
        if (e.status === 401) return;
        out.replaceChildren();
        if (!notAvailable(out, e, 'The job list')) out.append(el('p', { class: 'error', role: 'alert' }, e.message));
      }
    };
    f.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const q = new URLSearchParams();
      for (const k of FILTERS) { const x = k === 'key' ? f.elements[k].value : f.elements[k].value.trim(); if (x) q.set(k, x); }
      const h = '#/jobs' + ([...q].length ? '?' + q.toString() : '');
      if (location.hash === h) route(); else location.hash = h; // hashchange routes
    });
    load(false);
  }

  function field(id, label, input) { return el('div', {}, el('label', { for: id }, label), input); }

  function renderList(out, jobs, append, more, atMs) {
    let tbody = out.querySelector('tbody');
    if (!append || !tbody) {
      tbody = el('tbody');
      out.replaceChildren(el('div', { class: 'scroll', role: 'region', 'aria-label': 'Job list', tabindex: '0' },
        el('table', { id: 'jobs', class: 'cards' }, el('caption', {}, 'Jobs, newest first (times in UTC)'),
          el('thead', {}, el('tr', {}, ...['Id', 'Topic', 'State', 'Attempts', 'Created', 'Key', 'Last error'].map((h) => el('th', { scope: 'col' }, h)))),
          tbody)));
    }
    for (const j of jobs) {
      // The first line of the error (the whole in its title and on focus).
      const err = j.last_error === null ? '' : j.last_error;
      tbody.append(el('tr', { 'data-id': j.id },
        el('td', { 'data-label': 'Id' }, el('a', { href: '#/job/' + j.id }, String(j.id))),
        el('td', { class: 'topic', 'data-label': 'Topic' }, j.topic),
        el('td', { 'data-label': 'State' }, stateBadge(j.state), leaseNote(j, atMs)),
        el('td', { class: 'num', 'data-label': 'Attempts' }, j.attempts + '/' + j.max_attempts),
        el('td', { class: 'time', 'data-label': 'Created' }, fmtTime(j.created_at_ms)),
        el('td', { class: 'long', 'data-label': 'Key' }, j.key === null ? '—' : clip(j.key, 'key')),
        el('td', { class: 'long', 'data-label': 'Last error' }, err === '' ? '—' : clip(err, 'err'))));
    }
    const old = out.querySelector('#more');
    if (old) old.remove();
    if (more) out.append(el('button', { type: 'button', id: 'more', class: 'secondary', on: { click: more } }, 'Next page'));
  }

  // ---- enqueue ----------------------------------------------------------------------------

  function enqueuePage() {
    const v = view('Enqueue a job');
    if (session.read_only) { v.append(el('p', { class: 'note' }, 'Read-only session: signed in with a worker token.')); return; }
    const result = el('p', { id: 'enqueue-result', role: 'status' });
    const err = el('p', { class: 'error', role: 'alert', id: 'enqueue-error' });
    const f = el('form', { id: 'enqueue-form' },
      el('label', { for: 'e-topic' }, 'Topic'), el('input', { id: 'e-topic', name: 'topic', required: true, spellcheck: 'false' }),
      el('label', { for: 'e-payload' }, 'Payload (JSON)'), el('textarea', { id: 'e-payload', name: 'payload', required: true, spellcheck: 'false' }, '{}'),
      el('label', { for: 'e-key' }, 'Idempotency key (optional)'), el('input', { id: 'e-key', name: 'key' }),
      el('label', { for: 'e-delay' }, 'Delay in milliseconds (optional)'), el('input', { id: 'e-delay', name: 'delay_ms', inputmode: 'numeric' }),
      el('label', { for: 'e-attempts' }, 'Max attempts (optional)'), el('input', { id: 'e-attempts', name: 'max_attempts', inputmode: 'numeric' }),
      el('label', { for: 'e-priority' }, 'Priority 1 (first, the default) to 9 (optional)'), el('input', { id: 'e-priority', name: 'priority', inputmode: 'numeric' }),
      el('button', { type: 'submit' }, 'Enqueue'), err, result);
    f.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      err.textContent = '';
      result.replaceChildren();
      try {
        const r = await api('enqueue', {
          topic: $('e-topic').value.trim(), payload: $('e-payload').value, key: $('e-key').value,
          delay_ms: $('e-delay').value.trim(), max_attempts: $('e-attempts').value.trim(),
          priority: $('e-priority').value.trim(),
        }, 'POST');
        result.append(r.created ? 'Enqueued as ' : 'Already enqueued (same key) as ', el('a', { href: '#/job/' + r.id, id: 'enqueued-link' }, 'job ' + r.id), '.');
      } catch (e) { err.textContent = 'Enqueue refused: ' + e.message; }
    });
    v.append(f);
  }

  // ---- schedules --------------------------------------------------------------------------

  async function schedulesPage() {
    const v = view('Schedules');
    try {
      const r = await api('schedules');
      const rows = r.schedules.map((s) => el('tr', {}, el('td', {}, s.name), el('td', {}, s.topic),
        el('td', {}, s.cron !== null ? s.cron : 'every ' + fmtAge(s.every_ms)),
        el('td', {}, s.tz || ''), el('td', {}, fmtTime(s.next_slot_ms)), el('td', {}, fmtTime(s.last_slot_ms))));
      v.append(el('div', { class: 'scroll', role: 'region', 'aria-label': 'Schedules', tabindex: '0' },
        el('table', { id: 'schedules' }, el('caption', {}, 'Periodic jobs'),
          el('thead', {}, el('tr', {}, ...['Name', 'Topic', 'Schedule', 'Time zone', 'Next', 'Last'].map((h) => el('th', { scope: 'col' }, h)))),
          el('tbody', {}, ...rows))));
    } catch (e) {
      if (!notAvailable(v, e, 'Schedules')) v.append(el('p', { class: 'error', role: 'alert' }, e.message));
    }
  }

  // ---- history: charts drawn as SVG (issue 28.4) -------------------------------------------

  const SVG = 'http://www.w3.org/2000/svg';
  function svgEl(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }

  // The smallest 1-2-5 step at or above x (the charts' top), 1 for nothing.
  function niceMax(x) {
    if (!(x > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(x)));
    for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
    return 10 * p;
  }
  function fmtHHMM(ms) { return new Date(ms).toISOString().slice(11, 16); }
  function fmtNum(v) { return v >= 100 ? String(Math.round(v)) : String(Math.round(v * 10) / 10); }

  // One line chart: series [{name, cls, values}] over times (ms); null values are gaps.
  // fmt turns a value into text (axis, summary). The SVG is an image with a text summary
  // (role img, its title and desc); the legend and the last values are plain HTML.
  function lineChart(id, title, times, series, fmt) {
    const W = 640, H = 180, L = 56, R = 8, T = 10, B = 24;
    const all = series.flatMap((s) => s.values.filter((v) => v !== null));
    const top = niceMax(all.length ? Math.max(...all) : 0);
    const x = (i) => L + (times.length > 1 ? i * (W - L - R) / (times.length - 1) : 0);
    const y = (v) => T + (H - T - B) * (1 - v / top);
    const svg = svgEl('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-labelledby': id + '-t ' + id + '-d', id });
    const last = series.map((s) => { const v = [...s.values].reverse().find((x) => x !== null); return s.name + ' ' + (v === undefined ? '—' : fmt(v)); });
    svg.append(svgEl('title', { id: id + '-t' }, title),
      svgEl('desc', { id: id + '-d' }, all.length ? 'Highest ' + fmt(Math.max(...all)) + '; latest: ' + last.join(', ') + '.' : 'Nothing recorded in this window.'));
    for (const f of [0, 0.5, 1]) {
      svg.append(svgEl('line', { x1: L, x2: W - R, y1: y(top * f), y2: y(top * f), class: 'grid' }),
        svgEl('text', { x: L - 6, y: y(top * f) + 4, class: 'axis', 'text-anchor': 'end' }, fmt(top * f)));
    }
    for (const i of [0, Math.floor((times.length - 1) / 2), times.length - 1]) {
      if (times.length) svg.append(svgEl('text', { x: x(i), y: H - 6, class: 'axis', 'text-anchor': i === 0 ? 'start' : i === times.length - 1 ? 'end' : 'middle' }, fmtHHMM(times[i])));
    }
    for (const s of series) {
      let d = '', pen = false;
      s.values.forEach((v, i) => {
        if (v === null) { pen = false; return; }
        d += (pen ? 'L' : 'M') + x(i).toFixed(1) + ' ' + y(v).toFixed(1);
        pen = true;
      });
      // A lone point between gaps draws nothing as a path: a dot shows it.
      s.values.forEach((v, i) => {
        if (v !== null && (i === 0 || s.values[i - 1] === null) && (i === s.values.length - 1 || s.values[i + 1] === null)) {
          svg.append(svgEl('circle', { cx: x(i), cy: y(v), r: 2.5, class: 'dot ' + s.cls }));
        }
      });
      if (d) svg.append(svgEl('path', { d, class: 'line ' + s.cls, 'data-series': s.name }));
    }
    const legend = el('ul', { class: 'legend' }, ...series.map((s, k) => el('li', {}, el('span', { class: 'swatch ' + s.cls, 'aria-hidden': 'true' }), last[k])));
    return el('figure', { class: 'chart-box' }, el('figcaption', {}, title), svg, legend);
  }

  async function historyPage(query) {
    const v = view('History');
    const p = new URLSearchParams(query);
    const win = p.get('window') === '24h' ? '24h' : '1h';
    const pick = el('select', { id: 'h-topic', name: 'topic' });
    const f = el('form', { class: 'inline', id: 'history-filter' },
      field('h-topic', 'Topic', pick),
      el('div', { class: 'toggle', role: 'group', 'aria-label': 'Window' },
        ...['1h', '24h'].map((w) => el('button', { type: 'button', class: w === win ? '' : 'secondary', 'aria-pressed': w === win ? 'true' : 'false', 'data-window': w,
          on: { click: () => { location.hash = '#/history?' + new URLSearchParams({ topic: pick.value, window: w }); } } }, w === '1h' ? 'Last hour' : 'Last 24 hours'))));
    const note = el('p', { class: 'note', id: 'history-note' }, 'Loading…');
    const charts = el('div', { id: 'history-charts', class: 'charts' });
    v.append(f, note, charts);
    let topics = [];
    try {
      const o = await api('overview');
      noteGatewayTime(o.at_ms);
      topics = o.topics.map((t) => t.topic);
    } catch (e) { /* the topic in the URL still works */ }
    const want = p.get('topic') || topics[0] || '';
    if (want && !topics.includes(want)) topics.unshift(want);
    pick.replaceChildren(...topics.map((t) => el('option', { value: t, selected: t === want }, t)));
    pick.addEventListener('change', () => { location.hash = '#/history?' + new URLSearchParams({ topic: pick.value, window: win }); });
    if (!want) { note.textContent = 'No topics yet.'; return; }
    const here = location.hash;
    async function refresh() {
      if (location.hash !== here) return;
      try {
        const r = await api('history', { topic: want, window: win });
        drawHistory(charts, r);
        note.textContent = (win === '1h' ? 'Per minute' : 'Per 5 minutes') + ', ' + fmtTime(r.from_ms) + ' to ' + fmtTime(r.to_ms) +
          ': counts of every gateway; the last point is the step in progress; gaps: nothing was recorded. Updated ' + fmtHHMM(Date.now()) + ' UTC.';
      } catch (e) { if (e.status !== 401) note.textContent = 'History failed: ' + e.message; }
      timer = setTimeout(refresh, 30000);
    }
    refresh();
  }

  function drawHistory(box, r) {
    const t = r.points.map((p) => p.at_ms);
    const col = (k) => r.points.map((p) => p[k]);
    box.replaceChildren(
      lineChart('chart-throughput', 'Throughput: jobs per minute', t,
        [{ name: 'started', cls: 's1', values: col('started_per_min') }, { name: 'finished', cls: 's2', values: col('finished_per_min') }], fmtNum),
      lineChart('chart-depth', 'Backlog: jobs waiting', t,
        [{ name: 'pending', cls: 's1', values: col('pending') }, { name: 'ready', cls: 's2', values: col('ready') }], fmtNum),
      lineChart('chart-wait', 'Wait from ready to start (p50, p99)', t,
        [{ name: 'p50', cls: 's1', values: col('wait_p50_ms') }, { name: 'p99', cls: 's2', values: col('wait_p99_ms') }], fmtWait));
  }
  function fmtWait(ms) { return ms < 1000 ? Math.round(ms) + ' ms' : fmtAge(ms); }

  // ---- workers and expired leases (issue 28.7) ----------------------------------------------

  // The gateway's clock as best known: the page's, shifted by how far the gateway's was
  // from it in the last reply that said (workers, worker_jobs; the job replies are the
  // protocol's job map and carry no time of their own).
  let clockSkew = 0;
  function noteGatewayTime(atMs) { if (atMs) clockSkew = atMs - Date.now(); }
  function gatewayNow() { return Date.now() + clockSkew; }

  // A processing job whose lease ran out (by the gateway's clock, atMs): the reaper has
  // not taken it back yet. null for any other job.
  function leaseNote(j, atMs) {
    if (j.state !== 'processing' || j.locked_until_ms === null || !atMs || j.locked_until_ms >= atMs) return null;
    return el('span', { class: 'badge expired', title: 'lease ran out ' + fmtAge(atMs - j.locked_until_ms) + ' ago' }, 'lease expired, waiting for the reaper');
  }

  async function workersPage(query) {
    const who = new URLSearchParams(query).get('worker');
    const v = view(who ? 'Worker ' + who : 'Workers');
    const out = el('div', { id: 'workers-out' });
    const again = el('button', { type: 'button', class: 'secondary', id: 'workers-refresh', on: { click: () => load() } }, 'Refresh');
    v.append(el('p', { class: 'note' }, who ? 'Jobs this worker holds now, oldest claim first.'
      : 'Workers holding jobs now, by the name they claim with, through any gateway. Last heartbeat ≈ lease until less the topic’s lease.'), again, out);
    async function load() {
      try {
        if (who) {
          const r = await api('worker_jobs', { worker: who });
          noteGatewayTime(r.at_ms);
          out.replaceChildren(workerJobs(r));
        } else {
          const r = await api('workers');
          noteGatewayTime(r.at_ms);
          out.replaceChildren(workersTable(r));
        }
      } catch (e) { if (e.status !== 401) out.replaceChildren(el('p', { class: 'error', role: 'alert' }, e.message)); }
    }
    await load();
  }

  function workersTable(r) {
    const rows = r.workers.map((w) => el('tr', { 'data-worker': w.worker },
      el('th', { scope: 'row' }, el('a', { href: '#/workers?' + new URLSearchParams({ worker: w.worker }) }, w.worker)),
      el('td', { class: 'num' }, String(w.jobs)),
      el('td', {}, w.topics.join(' ') + (w.n_topics > w.topics.length ? ' …' : '')),
      el('td', {}, fmtTime(w.oldest_claim_ms)),
      el('td', {}, fmtTime(w.last_heartbeat_ms)),
      el('td', {}, fmtTime(w.lease_until_ms)),
      el('td', { class: 'num' }, w.lease_expired ? el('span', { class: 'badge expired' }, w.lease_expired + ' expired') : '0')));
    if (!rows.length) rows.push(el('tr', {}, el('td', { colspan: 7 }, 'No worker holds a job now.')));
    return el('div', { class: 'scroll', role: 'region', 'aria-label': 'Workers holding jobs', tabindex: '0' },
      el('table', { id: 'workers' }, el('caption', {}, 'Workers holding jobs' + (r.truncated ? ' (the first 500)' : '') + ', at ' + fmtTime(r.at_ms)),
        el('thead', {}, el('tr', {}, ...['Worker', 'Jobs', 'Topics', 'Oldest claim', 'Last heartbeat (≈)', 'Lease until', 'Leases expired'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, ...rows)));
  }

  function workerJobs(r) {
    const rows = r.jobs.map((j) => el('tr', { 'data-id': j.id },
      el('td', {}, el('a', { href: '#/job/' + j.id }, String(j.id))), el('td', {}, j.topic),
      el('td', {}, stateBadge(j.state), leaseNote(j, r.at_ms)),
      el('td', {}, fmtTime(j.claimed_at_ms)), el('td', {}, fmtTime(j.locked_until_ms))));
    if (!rows.length) rows.push(el('tr', {}, el('td', { colspan: 5 }, 'This worker holds no job now.')));
    return el('div', { class: 'scroll', role: 'region', 'aria-label': 'Jobs held', tabindex: '0' },
      el('table', { id: 'worker-jobs' }, el('caption', {}, 'Jobs held, at ' + fmtTime(r.at_ms)),
        el('thead', {}, el('tr', {}, ...['Id', 'Topic', 'State', 'Claimed', 'Lease until'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, ...rows)));
  }

  // ---- attempts' errors and bulk actions (issue 28.6, 28.5) ---------------------------------

  // The job page's "Errors by attempt": each attempt's error with its time, oldest first,
  // its line breaks kept in a scrollable block. None for a job without any.
  function attemptErrors(j) {
    if (!j.errors || j.errors.length === 0) return [];
    const items = j.errors.map((e) => el('li', { class: 'attempt' },
      el('p', { class: 'attempt-head' }, 'Attempt ' + e.attempt + ', ' + fmtTime(e.at_ms)),
      el('pre', { class: 'attempt-error', tabindex: '0', 'aria-label': 'Error of attempt ' + e.attempt }, e.error)));
    const note = j.errors.length >= 10 ? el('p', { class: 'note' }, 'The latest 10 attempts are kept.') : null;
    return [el('h2', {}, 'Errors by attempt'), el('ol', { id: 'attempt-errors', class: 'attempts' }, ...items), note].filter((x) => x);
  }

  // The job list's filter as last applied (bulkRows), for "all matching".
  let bulkFilter = null;
  const BULK_IDS = 500;   // ids per call (the API's bound)
  const BULK_BATCH = 100; // jobs of the filter per call

  // A checkbox on each row of the list (and one for the page) once the list is drawn.
  function bulkRows(out, params) {
    bulkFilter = Object.assign({}, params);
    delete bulkFilter.cursor;
    delete bulkFilter.limit;
    if (!session || session.read_only) return;
    const head = out.querySelector('#jobs thead tr');
    if (head && !head.querySelector('.pick')) {
      const all = el('input', { type: 'checkbox', id: 'bulk-page', 'aria-label': 'Select every job on the page' });
      all.addEventListener('change', () => { for (const c of out.querySelectorAll('tbody .pick input')) c.checked = all.checked; bulkCount(out); });
      head.prepend(el('th', { scope: 'col', class: 'pick' }, all));
    }
    for (const tr of out.querySelectorAll('#jobs tbody tr')) {
      if (tr.querySelector('.pick')) continue;
      const box = el('input', { type: 'checkbox', 'aria-label': 'Select job ' + tr.dataset.id, 'data-id': tr.dataset.id, on: { change: () => bulkCount(out) } });
      tr.prepend(el('td', { class: 'pick' }, box));
    }
    bulkCount(out);
  }

  function bulkPicked(out) { return [...out.querySelectorAll('tbody .pick input:checked')].map((c) => c.dataset.id); }

  function bulkCount(out) {
    const b = $('bulk-selected');
    if (b) { const n = bulkPicked(out).length; b.textContent = 'Apply to ' + n + ' selected'; b.disabled = n === 0; }
  }

  const bulkVerb = { retry: 'Retry', cancel: 'Cancel', delete: 'Delete' };
  const bulkApplies = { retry: 'dead or canceled', cancel: 'pending, failed or processing', delete: 'done, dead or canceled' };

  function filterText(f) {
    const parts = Object.entries(f).filter(([, v]) => v !== '' && v !== null && v !== undefined)
      .map(([k, v]) => k.endsWith('_ms') ? k.slice(0, -3) + ' ' + fmtTime(Number(v)) : k + ' ' + v);
    return parts.length ? parts.join(', ') : 'no filter: every job';
  }

  // The bar above the list: an action, then the selected jobs or all the filter matches;
  // the count and a confirmation first, then batches with progress and a stop button.
  function bulkBar(out, reload) {
    if (!session || session.read_only) return el('div', { id: 'bulk', hidden: true });
    const action = el('select', { id: 'bulk-action' }, ...Object.keys(bulkVerb).map((a) => el('option', { value: a }, bulkVerb[a])));
    const confirmBox = el('div', { id: 'bulk-confirm', class: 'bulk-confirm', hidden: true });
    const progress = el('p', { id: 'bulk-progress', role: 'status' });
    const stop = el('button', { type: 'button', class: 'secondary', id: 'bulk-stop', hidden: true }, 'Stop');
    let stopping = false;
    stop.addEventListener('click', () => { stopping = true; stop.disabled = true; });
    const busy = (on) => {
      for (const b of [$('bulk-selected'), $('bulk-all'), action]) b.disabled = on;
      stop.hidden = !on; stop.disabled = false;
      if (!on) bulkCount(out);
    };
    const ask = (text, go) => {
      confirmBox.replaceChildren(el('p', { id: 'bulk-question' }, text),
        el('div', { class: 'actions' },
          el('button', { type: 'button', class: 'danger', id: 'bulk-go', on: { click: () => { confirmBox.hidden = true; go(); } } }, 'Confirm'),
          el('button', { type: 'button', class: 'secondary', id: 'bulk-cancel', on: { click: () => { confirmBox.hidden = true; progress.textContent = 'Nothing done.'; } } }, 'Back')));
      confirmBox.hidden = false;
      $('bulk-go').focus();
    };
    // Calls `step(state)` until it says the work is done or Stop is pressed; totals shown.
    const run = async (a, total, step) => {
      const t = { done: 0, skipped: 0, processed: 0 };
      stopping = false;
      busy(true);
      const show = (end) => {
        progress.textContent = bulkVerb[a] + ': ' + t.processed + (total !== null ? ' of ' + total : '') + ' handled, ' +
          t.done + ' changed, ' + t.skipped + ' skipped (not ' + bulkApplies[a] + ')' + (end ? end : '…');
      };
      show();
      try {
        for (;;) {
          const r = await step(t);
          t.processed += r.processed; t.done += r.done; t.skipped += r.skipped;
          if (r.finished) { show('. Finished.'); break; }
          if (stopping) { show('. Stopped.'); break; }
          show();
        }
      } catch (e) {
        show('. Stopped: ' + e.message);
      }
      busy(false);
      say(progress.textContent);
      reload();
    };
    const onSelected = () => {
      const a = action.value, ids = bulkPicked(out);
      if (ids.length === 0) return;
      ask(bulkVerb[a] + ' ' + ids.length + ' selected job' + (ids.length === 1 ? '' : 's') + '? Only jobs that are ' + bulkApplies[a] + ' change; the others are skipped.', () => {
        let rest = ids.slice();
        run(a, ids.length, async () => {
          const r = await api('bulk', { action: a, ids: rest.slice(0, BULK_IDS).join(',') }, 'POST');
          rest = rest.slice(r.processed);
          return Object.assign(r, { finished: rest.length === 0 });
        });
      });
    };
    const onAll = async () => {
      const a = action.value, f = Object.assign({}, bulkFilter || {});
      progress.textContent = 'Counting the jobs the filter matches…';
      let c;
      try { c = await api('jobs_count', f); } catch (e) { progress.textContent = 'Count failed: ' + e.message; return; }
      progress.textContent = '';
      if (c.count === 0) { progress.textContent = 'No job matches the filter (' + filterText(f) + ').'; return; }
      const n = c.more ? 'More than ' + c.count : String(c.count);
      ask(bulkVerb[a] + ' all jobs matching the filter (' + filterText(f) + ')? ' + n + ' job' + (c.count === 1 && !c.more ? '' : 's') +
        ' match now. Only jobs that are ' + bulkApplies[a] + ' change; the others are skipped. Done ' + BULK_BATCH + ' at a time; you can stop between batches.', () => {
        let cursor = '';
        run(a, c.more ? null : c.count, async () => {
          const r = await api('bulk', Object.assign({ action: a, all: 1, limit: BULK_BATCH, cursor }, f), 'POST');
          cursor = r.next;
          return Object.assign(r, { finished: r.next === null });
        });
      });
    };
    return el('div', { id: 'bulk', class: 'bulk', role: 'group', 'aria-label': 'Bulk actions' },
      el('div', { class: 'actions' },
        el('label', { for: 'bulk-action' }, 'Bulk action'), action,
        el('button', { type: 'button', id: 'bulk-selected', disabled: true, on: { click: onSelected } }, 'Apply to 0 selected'),
        el('button', { type: 'button', class: 'secondary', id: 'bulk-all', on: { click: onAll } }, 'Apply to all matching the filter'),
        stop),
      confirmBox, progress);
  }

  // ---- routing ----------------------------------------------------------------------------

  function findJobForm() {
    const f = el('form', { class: 'inline', id: 'find-job' },
      el('div', {}, el('label', { for: 'find-id' }, 'Job id'), el('input', { id: 'find-id', name: 'id', inputmode: 'numeric', required: true })),
      el('button', { type: 'submit' }, 'Open job'));
    f.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const id = $('find-id').value.trim();
      if (/^[0-9]+$/.test(id)) location.hash = '#/job/' + id;
    });
    return f;
  }

  function route() {
    if (!session) return;
    viewGen++; // ends the last view's refresh loop
    viewPoll = null;
    const h = location.hash || '#/overview';
    for (const a of document.querySelectorAll('nav a')) {
      if (h.startsWith(a.getAttribute('href'))) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    let m;
    if ((m = /^#\/job\/([0-9]+)$/.exec(h))) jobPage(m[1]);
    else if ((m = /^#\/jobs(?:\?(.*))?$/.exec(h))) jobsPage(m[1] || '');
    else if (h === '#/enqueue') enqueuePage();
    else if (h === '#/schedules') schedulesPage();
    else if ((m = /^#\/history(?:\?(.*))?$/.exec(h))) historyPage(m[1] || '');
    else if ((m = /^#\/workers(?:\?(.*))?$/.exec(h))) workersPage(m[1] || '');
    else overview();
  }

  async function start() {
    $('signin-form').addEventListener('submit', signIn);
    $('signout').addEventListener('click', signOut);
    window.addEventListener('hashchange', route);
    try { signedIn(await api('session')); } catch (e) { signedOut(); }
  }

  document.addEventListener('DOMContentLoaded', start);
})();
