// SPDX-License-Identifier: MIT
// brooq console: a small page over the gateway's JSON API (docs/console.md). No framework, no
// inline script, no innerHTML with data: every text goes through textContent.
'use strict';

(function () {
  const API = '/console/api/';
  const STATES = ['pending', 'failed', 'processing', 'done', 'dead', 'canceled'];
  const TERMINAL = ['done', 'dead', 'canceled'];
  let session = null; // {role, read_only, csrf, token_fp, expires_at_ms, expires_at}
  let timer = null;   // the current page's auto-refresh

  const $ = (id) => document.getElementById(id);

  // el('td', {class: 'num'}, 'text', childNode, ...)
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === null || v === undefined) continue;
      if (k === 'on') { for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn); }
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
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
    if (res.status === 401 && path !== 'login') { signedOut(); throw new ApiError(401, 'signed out'); }
    // Errors are the protocol's error reply in JSON: {code, msg} (docs/protocol.md §11).
    if (!res.ok) throw new ApiError(res.status, (body && body.msg) || res.statusText);
    return body;
  }

  // An age or duration in ms (every duration of the JSON form is an integer of ms).
  function fmtAge(ms) {
    if (ms === null || ms === undefined) return '—';
    const s = ms / 1000;
    if (s < 1) return '0 s';
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
    clearTimeout(timer);
    $('nav').hidden = true;
    $('who').hidden = true;
    $('view').hidden = true;
    $('signin').hidden = false;
    $('token').value = '';
  }

  function signedIn(s) {
    session = s;
    $('signin').hidden = true;
    $('nav').hidden = false;
    $('who').hidden = false;
    $('view').hidden = false;
    const role = $('role');
    role.replaceChildren('Signed in: ' + s.role + ' (token ' + s.token_fp + ')');
    if (s.read_only) role.append(' ', el('span', { class: 'badge ro' }, 'read-only'));
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
    const note = el('p', { class: 'note', id: 'ov-note' }, 'Loading…');
    const wrap = el('div', { class: 'scroll', role: 'region', 'aria-label': 'Topics', tabindex: '0' });
    v.append(findJobForm(), note, wrap);
    let topicsMeta = null; // pause state and limits, when the gateway has them
    try {
      const t = await api('topics');
      topicsMeta = new Map(t.topics.map((x) => [x.topic, x]));
    } catch (e) { if (e.status !== 501) note.textContent = 'Topic settings: ' + e.message; }

    async function refresh() {
      if (location.hash !== '#/overview' && location.hash !== '' && location.hash !== '#/') return;
      try {
        const o = await api('overview');
        wrap.replaceChildren(overviewTable(o, topicsMeta));
        note.textContent = 'Depth from the monitor’s last count; rates over the last ' +
          (o.rate_window_ms === null ? '— (measuring)' : Math.round(o.rate_window_ms / 1000) + ' s') +
          '. Updated ' + new Date(o.at_ms).toLocaleTimeString() + '.';
      } catch (e) { if (e.status !== 401) note.textContent = 'Refresh failed: ' + e.message; }
      timer = setTimeout(refresh, 2000);
    }
    refresh();
  }

  function overviewTable(o, meta) {
    const head = el('tr', {},
      el('th', { scope: 'col' }, 'Topic'),
      ...STATES.map((s) => el('th', { scope: 'col', class: 'num' }, s)),
      el('th', { scope: 'col', class: 'num' }, 'Oldest ready'),
      el('th', { scope: 'col', class: 'num' }, 'Started / min'),
      el('th', { scope: 'col', class: 'num' }, 'Finished / min'),
      el('th', { scope: 'col' }, 'Status'));
    const rows = o.topics.map((t) => {
      // Only paused or limited topics are listed: any other topic is neither.
      const m = meta && (meta.get(t.topic) || { topic: t.topic, paused: false, max_running: null, rate_per_s: null });
      const status = el('td', {});
      if (m) {
        if (m.paused) status.append(el('span', { class: 'badge paused' }, 'paused'));
        if (m.max_running) status.append(' ≤' + m.max_running + ' running');
        if (m.rate_per_s) status.append(' ≤' + m.rate_per_s + '/s');
        if (session && !session.read_only) {
          status.append(' ', el('button', { type: 'button', class: 'secondary', on: { click: () => pauseTopic(t.topic, !m.paused) } },
            (m.paused ? 'Resume ' : 'Pause ') + t.topic));
        }
      }
      return el('tr', { 'data-topic': t.topic },
        el('th', { scope: 'row' }, el('a', { href: '#/jobs?topic=' + encodeURIComponent(t.topic) }, t.topic)),
        ...STATES.map((s) => el('td', { class: 'num', 'data-state': s }, t[s])),
        el('td', { class: 'num' }, fmtAge(t.oldest_ready_age_ms)),
        el('td', { class: 'num' }, fmtRate(t.started_per_min)),
        el('td', { class: 'num' }, fmtRate(t.finished_per_min)),
        status);
    });
    if (!rows.length) rows.push(el('tr', {}, el('td', { colspan: 11 }, 'No topics yet.')));
    return el('table', { id: 'topics' }, el('caption', {}, 'Jobs per topic and state'), el('thead', {}, head), el('tbody', {}, ...rows));
  }

  async function pauseTopic(topic, pause) {
    try {
      await api(pause ? 'pause' : 'resume', { topic }, 'POST');
      say((pause ? 'Paused ' : 'Resumed ') + topic);
      overview();
    } catch (e) { say('Failed: ' + e.message); }
  }

  // ---- one job ----------------------------------------------------------------------------

  async function jobPage(id) {
    const v = view('Job ' + id);
    const body = el('div', { id: 'job' });
    const msg = el('p', { class: 'error', role: 'alert', id: 'job-msg' });
    v.append(body, msg);
    async function refresh(first) {
      if (location.hash !== '#/job/' + id) return;
      try {
        const r = await api('job', { id });
        renderJob(body, r.job, msg);
      } catch (e) {
        if (e.status === 401) return;
        if (first) body.replaceChildren(el('p', {}, e.status === 404 ? 'No job ' + id + '.' : 'Failed: ' + e.message));
      }
      timer = setTimeout(refresh, 3000);
    }
    await refresh(true);
  }

  function renderJob(box, j, msg) {
    const dl = el('dl', {},
      el('dt', {}, 'State'), el('dd', { id: 'job-state' }, stateBadge(j.state)),
      el('dt', {}, 'Topic'), el('dd', {}, j.topic),
      el('dt', {}, 'Attempts'), el('dd', {}, j.attempts + ' of ' + j.max_attempts),
      // Leases that ran out without an outcome: the crash-loop quarantine's count.
      el('dt', {}, 'Lost leases'), el('dd', { id: 'job-lost-leases' }, String(j.lost_leases)),
      el('dt', {}, 'Priority'), el('dd', {}, j.priority === null ? '—' : String(j.priority)),
      el('dt', {}, 'Idempotency key'), el('dd', {}, j.key === null ? '—' : j.key),
      el('dt', {}, 'Created'), el('dd', {}, fmtTime(j.created_at_ms)),
      // A terminal job's last update is when it finished.
      el('dt', {}, ['done', 'dead', 'canceled'].includes(j.state) ? 'Finished' : 'Updated'),
      el('dd', {}, fmtTime(j.updated_at_ms)),
      el('dt', {}, 'Available at'), el('dd', {}, fmtTime(j.available_at_ms)),
      el('dt', {}, 'Lease holder'), el('dd', {}, j.locked_by === null ? '—' : j.locked_by),
      el('dt', {}, 'Lease until'), el('dd', {}, fmtTime(j.locked_until_ms)),
      el('dt', {}, 'Claimed'), el('dd', {}, fmtTime(j.claimed_at_ms)),
      el('dt', {}, 'Attempt deadline'), el('dd', {}, fmtTime(j.attempt_deadline_ms)),
      el('dt', {}, 'Max execution ends'), el('dd', {}, fmtTime(j.max_execution_deadline_ms)),
      el('dt', {}, 'Last error'), el('dd', {}, j.last_error === null ? '—' : j.last_error));
    const acts = el('div', { class: 'actions' });
    if (session && !session.read_only) {
      if (!TERMINAL.includes(j.state)) {
        acts.append(el('button', { type: 'button', class: 'danger', id: 'cancel-job', on: { click: () => act('cancel', j.id, msg) } }, 'Cancel job'));
      }
      if (j.state === 'dead' || j.state === 'canceled') {
        acts.append(el('button', { type: 'button', id: 'retry-job', on: { click: () => act('retry', j.id, msg) } }, 'Retry job'));
      }
      if (TERMINAL.includes(j.state)) {
        acts.append(el('button', { type: 'button', class: 'secondary', id: 'delete-job', on: { click: () => act('delete', j.id, msg) } }, 'Delete job'));
      }
    }
    box.replaceChildren(dl, acts, el('h2', {}, 'Payload'),
      el('pre', { tabindex: '0', 'aria-label': 'Payload' }, JSON.stringify(j.payload, null, 2)));
    if (j.result !== null) {
      box.append(el('h2', {}, 'Result'), el('pre', { tabindex: '0', 'aria-label': 'Result' }, JSON.stringify(j.result, null, 2)));
    }
    box.append(...attemptErrors(j));
  }

  async function act(what, id, msg) {
    if (!window.confirm(what[0].toUpperCase() + what.slice(1) + ' job ' + id + '?')) return;
    msg.textContent = '';
    try {
      const r = await api(what, { id }, 'POST');
      say(what + ' job ' + id + ': ' + (r.state || (r.deleted ? 'deleted' : 'done')));
      if (what === 'delete' && r.deleted) { location.hash = '#/overview'; return; }
      clearTimeout(timer);
      jobPage(id);
    } catch (e) { msg.textContent = what + ' failed: ' + e.message; }
  }

  // ---- the job list -----------------------------------------------------------------------

  async function jobsPage(query) {
    const v = view('Jobs');
    const p = new URLSearchParams(query);
    const f = el('form', { class: 'inline', id: 'jobs-filter' },
      field('f-topic', 'Topic', el('input', { id: 'f-topic', name: 'topic', value: p.get('topic') || '' })),
      field('f-state', 'State', el('select', { id: 'f-state', name: 'state' },
        el('option', { value: '' }, 'any'), ...STATES.map((s) => el('option', { value: s, selected: p.get('state') === s }, s)))),
      field('f-key', 'Idempotency key', el('input', { id: 'f-key', name: 'key', value: p.get('key') || '' })),
      field('f-after', 'Created after', el('input', { id: 'f-after', name: 'created_after', type: 'datetime-local' })),
      field('f-before', 'Created before', el('input', { id: 'f-before', name: 'created_before', type: 'datetime-local' })),
      el('button', { type: 'submit' }, 'Filter'));
    const out = el('div', { id: 'jobs-out' });
    v.append(f, bulkBar(out, () => f.requestSubmit()), out);
    let cursor = null;
    const load = async (more) => {
      const params = {
        topic: $('f-topic').value.trim(), state: $('f-state').value, key: $('f-key').value,
        created_after_ms: $('f-after').value ? Date.parse($('f-after').value) : '',
        created_before_ms: $('f-before').value ? Date.parse($('f-before').value) : '',
        limit: 50, cursor: more ? cursor : '',
      };
      try {
        const r = await api('jobs', params);
        cursor = r.next;
        renderList(out, r.jobs, more, cursor ? () => load(true) : null);
        bulkRows(out, params);
      } catch (e) {
        out.replaceChildren();
        if (!notAvailable(out, e, 'The job list')) out.append(el('p', { class: 'error', role: 'alert' }, e.message));
      }
    };
    f.addEventListener('submit', (ev) => { ev.preventDefault(); load(false); });
    load(false);
  }

  function field(id, label, input) { return el('div', {}, el('label', { for: id }, label), input); }

  function renderList(out, jobs, append, more) {
    let tbody = out.querySelector('tbody');
    if (!append || !tbody) {
      tbody = el('tbody');
      out.replaceChildren(el('div', { class: 'scroll', role: 'region', 'aria-label': 'Job list', tabindex: '0' },
        el('table', { id: 'jobs' }, el('caption', {}, 'Jobs, newest first'),
          el('thead', {}, el('tr', {}, ...['Id', 'Topic', 'State', 'Attempts', 'Created', 'Last error'].map((h) => el('th', { scope: 'col' }, h)))),
          tbody)));
    }
    for (const j of jobs) {
      tbody.append(el('tr', { 'data-id': j.id },
        el('td', {}, el('a', { href: '#/job/' + j.id }, String(j.id))), el('td', {}, j.topic), el('td', {}, stateBadge(j.state)),
        el('td', { class: 'num' }, j.attempts + '/' + j.max_attempts), el('td', {}, fmtTime(j.created_at_ms)),
        el('td', {}, j.last_error === null ? '' : j.last_error.slice(0, 80))));
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
    clearTimeout(timer);
    const h = location.hash || '#/overview';
    for (const a of document.querySelectorAll('nav a')) {
      if (h.startsWith(a.getAttribute('href'))) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    let m;
    if ((m = /^#\/job\/([0-9]+)$/.exec(h))) jobPage(m[1]);
    else if ((m = /^#\/jobs(?:\?(.*))?$/.exec(h))) jobsPage(m[1] || '');
    else if (h === '#/enqueue') enqueuePage();
    else if (h === '#/schedules') schedulesPage();
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
