// SPDX-License-Identifier: MIT
// The console of issue 28 in a real browser: layouts that hold with 128-byte topics, long keys
// and errors at 375, 1280 and 2560 px (screenshots into $BROOQ_TEST_OUT_DIR: ui-*.png); figures
// that say what they are (estimates, stale data, nothing ready); and a page that keeps selection
// and focus, runs one refresh loop per view, escapes bidi controls, links retries, keeps filters
// in the URL and a half-filled form across a session's end, and speaks UTC. Every wait is for a
// state, never a fixed time; the two windows that count requests bound them from above only.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { assertCleanLog, createDb, dropDb, launchBrowser, outDir, psql, startGateway } from './lib.mjs';

let db, gw, browser, page;
const T128 = 'long.' + 'x'.repeat(118) + '.tail'; // 128 bytes, the longest topic
const RLO = '\u202E';
const ids = {};
const dialogs = [];

before(async () => {
  assert.equal(Buffer.byteLength(T128), 128);
  fs.mkdirSync(outDir, { recursive: true });
  db = createDb();
  const err = Array.from({ length: 60 }, (_, i) => `line ${i + 1}: smtp said no`).join('\n');
  ids.long = psql(db, `INSERT INTO job (topic, payload, state, attempts, idempotency_key, last_error)
    VALUES ('${T128}', jsonb_build_object('blob', repeat('p', 65536), 'name', 'invoice${RLO}fdp.exe'), 'dead', 3,
            'key-${'k'.repeat(200)}-${RLO}end', E'first line\\nsecond ${RLO}line\\n' || '${err}') RETURNING id`);
  psql(db, `INSERT INTO job (topic, payload) SELECT '${T128}', '{}' FROM generate_series(1, 3)`);
  ids.a = psql(db, `INSERT INTO job (topic, payload, idempotency_key) VALUES ('email.send', '{}', 'shared-key') RETURNING id`);
  ids.b = psql(db, `INSERT INTO job (topic, payload, idempotency_key) VALUES ('report.build', '{}', 'shared-key') RETURNING id`);
  ids.done = psql(db, `INSERT INTO job (topic, payload, state) VALUES ('only.done', '{}', 'done') RETURNING id`);
  gw = await startGateway(db);
  browser = await launchBrowser();
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.on('dialog', (d) => { dialogs.push(d.message()); d.accept(); });
  await signIn(page);
});

after(async () => {
  if (browser) await browser.close();
  if (gw) {
    const { exited, log } = await gw.stop();
    assertCleanLog(log);
    assert.deepEqual(exited, { code: 0, sig: null }, 'gateway exit\n' + log);
  }
  if (db) { psql('postgres', `ALTER DATABASE ${db} ALLOW_CONNECTIONS true`); dropDb(db); }
});

async function signIn(p) {
  await p.goto(gw.url + '/console/', { waitUntil: 'networkidle0' });
  await p.waitForSelector('#token', { visible: true });
  await p.type('#token', gw.admin);
  await p.click('#signin-form button[type=submit]');
  await p.waitForSelector('#nav', { visible: true });
}

const rowSel = (topic) => `#topics tr[data-topic="${topic}"]`;

// Counts the requests of p whose URL contains part, from now on.
// Requests of page p whose URL holds `part`; with `whole`, only where part ends the URL or
// a parameter (id=1 is not id=12: a request for another job is not this one's).
function counter(p, part, whole) {
  const c = { n: 0 };
  const on = (r) => {
    const u = r.url(), i = u.indexOf(part), next = u[i + part.length];
    if (i >= 0 && (!whole || next === undefined || next === '&' || next === '#')) c.n++;
  };
  p.on('request', on);
  c.stop = () => p.off('request', on);
  return c;
}

// Requests of page p for exactly `part` (as counter's `whole`) made after one was answered
// 200: a request that failed (the database just back, a busy machine) is asked again, an
// answered one is not.
function askedAfterAnswer(p, part) {
  const c = { answered: false, n: 0 };
  const is = (u) => { const i = u.indexOf(part), next = u[i + part.length]; return i >= 0 && (next === undefined || next === '&' || next === '#'); };
  const onRes = (r) => { if (is(r.url()) && r.status() === 200) c.answered = true; };
  const onReq = (r) => { if (is(r.url()) && c.answered) c.n++; };
  p.on('response', onRes);
  p.on('request', onReq);
  c.stop = () => { p.off('response', onRes); p.off('request', onReq); };
  return c;
}

// Nothing wider than the window: no horizontal page scroll.
async function assertNoPageScroll(p, what) {
  const [sw, iw] = await p.evaluate(() => [document.scrollingElement.scrollWidth, window.innerWidth]);
  assert.ok(sw <= iw, `${what}: the page is ${sw} px wide in a ${iw} px window`);
}

test('layout: a 128-byte topic, long keys and errors fit at 375, 1280 and 2560 px', async () => {
  const shots = [];
  for (const width of [1280, 375, 2560]) {
    await page.setViewport({ width, height: width === 375 ? 812 : 900 });
    await page.goto(gw.url + '/console/#/overview');
    await page.waitForFunction((sel) => document.querySelector(sel + ' td[data-state="pending"]')?.textContent === '3'
      && document.querySelector(sel + ' button'), { timeout: 30000 }, rowSel(T128));
    await assertNoPageScroll(page, `overview at ${width}`);
    // Every Pause button and every count is on screen: nothing pushed out to the right.
    const out = await page.evaluate(() => [...document.querySelectorAll('#topics button, #topics td, #topics th')]
      .map((e) => [e.textContent.slice(0, 30), e.getBoundingClientRect()])
      .filter(([, r]) => r.left < 0 || r.right > window.innerWidth + 0.5).map(([t]) => t));
    assert.deepEqual(out, [], `overview at ${width}: cut off at the right`);
    assert.ok(await page.$$eval('#topics button', (b) => b.length) >= 4, 'a Pause button per topic');
    // The topic is shown whole (wrapped), its link titled with it.
    assert.equal(await page.$eval(rowSel(T128) + ' th a', (a) => a.textContent + '|' + a.title), T128 + '|' + T128);
    const ov = path.join(outDir, `ui-overview-${width}.png`);
    await page.screenshot({ path: ov, fullPage: true });

    await page.goto(gw.url + `/console/#/jobs?topic=${T128}`);
    await page.waitForFunction((id) => document.querySelector(`#jobs tr[data-id="${id}"]`), { timeout: 30000 }, ids.long);
    await assertNoPageScroll(page, `job list at ${width}`);
    const cut = await page.evaluate(() => [...document.querySelectorAll('#jobs td, #jobs th')]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5).map((e) => e.textContent.slice(0, 30)));
    assert.deepEqual(cut, [], `job list at ${width}: columns cut off`);
    const jl = path.join(outDir, `ui-jobs-${width}.png`);
    await page.screenshot({ path: jl, fullPage: true });

    await page.goto(gw.url + `/console/#/job/${ids.long}`);
    await page.waitForSelector('#job-state .badge');
    await assertNoPageScroll(page, `job page at ${width}`);
    const jp = path.join(outDir, `ui-job-${width}.png`);
    await page.screenshot({ path: jp, fullPage: true });
    shots.push(ov, jl, jp);
  }
  for (const f of shots) assert.ok(fs.statSync(f).size > 5000, f + ' is written');
  await page.setViewport({ width: 1280, height: 900 });
});

test('long keys and errors: cut with an ellipsis, whole in the title and while focused', async () => {
  await page.goto(gw.url + `/console/#/jobs?topic=${T128}`);
  const sel = `#jobs tr[data-id="${ids.long}"] .clip.key`;
  await page.waitForSelector(sel, { timeout: 30000 });
  const k = await page.$eval(sel, (e) => ({ title: e.title, clipped: e.scrollWidth > e.clientWidth, tab: e.tabIndex }));
  assert.ok(k.clipped, 'the key is cut');
  assert.match(k.title, /^key-k{200}-\\u202Eend$/, 'the whole key in the title (bidi escaped)');
  assert.equal(k.tab, 0, 'keyboard users reach it');
  await page.focus(sel);
  assert.equal(await page.$eval(sel, (e) => e.scrollWidth <= e.clientWidth), true, 'shown whole while focused');
});

test('the focus frame after sign-in is gone', async () => {
  const ctx = await browser.createBrowserContext();
  const p = await ctx.newPage();
  await signIn(p);
  await p.waitForSelector('#topics');
  const [id, outline] = await p.evaluate(() => [document.activeElement.id, getComputedStyle(document.activeElement).outlineStyle]);
  assert.equal(id, 'main', 'the focus moves to the content');
  assert.equal(outline, 'none', 'without a frame around the whole page');
  await ctx.close();
});

test('numbers: "—" when nothing is ready, ≈ for estimates', async () => {
  await page.goto(gw.url + '/console/#/overview');
  await page.waitForSelector(rowSel('only.done') + ' td[data-state="done"]');
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === '1', { timeout: 30000 }, rowSel('only.done') + ' td[data-state="done"]');
  assert.equal(await page.$eval(rowSel('only.done') + ' td[data-label="Oldest ready"]', (e) => e.textContent), '—');
  assert.notEqual(await page.$eval(rowSel('email.send') + ' td[data-label="Oldest ready"]', (e) => e.textContent), '—');
  // The gateway's flag (set by the monitor's sampled count: observability_test) as the
  // page shows it: the overview's answer is marked estimated on its way to the page.
  const ctx = await browser.createBrowserContext();
  const p = await ctx.newPage();
  await p.evaluateOnNewDocument(() => {
    const real = window.fetch;
    window.fetch = async (url, opts) => {
      const r = await real(url, opts);
      if (!String(url).endsWith('/api/overview') || !r.ok) return r;
      const o = await r.json();
      o.terminal_estimated = true;
      return new Response(JSON.stringify(o), { status: 200, headers: { 'Content-Type': 'application/json' } });
    };
  });
  await signIn(p);
  await p.waitForFunction((sel) => document.querySelector(sel)?.textContent === '≈ 1', { timeout: 30000 }, rowSel('only.done') + ' td[data-state="done"]');
  assert.equal(await p.$eval(rowSel('only.done') + ' td[data-state="pending"]', (e) => e.textContent), '0', 'active counts are exact');
  assert.match(await p.$eval('#ov-note', (e) => e.textContent), /≈ marks done, dead and canceled counts estimated/);
  await ctx.close();
});

test('stale: with the database away the overview gives the data\'s age, never a fresh time', async () => {
  await page.goto(gw.url + '/console/#/overview');
  await page.waitForFunction(() => /^Updated .* UTC\./.test(document.querySelector('#ov-note')?.textContent || ''), { timeout: 30000 });
  psql('postgres', `ALTER DATABASE ${db} ALLOW_CONNECTIONS false`);
  psql('postgres', `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '${db}'`);
  try {
    for (let i = 0; ; i++) {
      if ((await fetch(gw.url + '/healthz')).status === 503) break;
      assert.ok(i < 600, '/healthz never said 503');
      await new Promise((r) => setTimeout(r, 50));
    }
    await page.waitForFunction(() => /Data from .* ago, database unreachable\./.test(document.querySelector('#ov-note')?.textContent || ''), { timeout: 30000 });
    const note = await page.$eval('#ov-note', (e) => e.textContent);
    assert.doesNotMatch(note, /Updated/);
    assert.ok(await page.$eval('#ov-note', (e) => e.classList.contains('stale')), 'marked as stale');
  } finally {
    psql('postgres', `ALTER DATABASE ${db} ALLOW_CONNECTIONS true`);
  }
  await page.waitForFunction(() => /^Updated /.test(document.querySelector('#ov-note')?.textContent || ''), { timeout: 60000 });
});

test('a job\'s page keeps a selection and the focus; a finished job stops asking', async () => {
  await page.goto(gw.url + `/console/#/job/${ids.a}`);
  await page.waitForSelector('#job-state .badge');
  await page.evaluate(() => {
    window.getSelection().selectAllChildren(document.querySelector('#job-topic'));
    document.querySelector('pre[aria-label="Payload"]').focus();
  });
  const asked = counter(page, '/api/job?');
  psql(db, `UPDATE job SET attempts = 2 WHERE id = ${ids.a}`);
  await page.waitForFunction(() => /^2 of/.test(document.querySelector('#job-attempts').textContent), { timeout: 30000 });
  while (asked.n < 2) await page.waitForResponse((r) => r.url().includes('/api/job?'), { timeout: 30000 });
  asked.stop();
  const [sel, focus] = await page.evaluate(() => [window.getSelection().toString(), document.activeElement.getAttribute('aria-label')]);
  assert.equal(sel, 'email.send', 'the selection survives the refreshes');
  assert.equal(focus, 'Payload', 'so does the focus');

  // A done job's page asks once; a pending job's page, meanwhile, asks again and again.
  const ctx = await browser.createBrowserContext();
  const p2 = await ctx.newPage();
  await signIn(p2);
  const done = askedAfterAnswer(page, `/api/job?id=${ids.done}`);
  const live = counter(p2, `/api/job?id=${ids.b}`, true);
  await page.goto(gw.url + `/console/#/job/${ids.done}`);
  await p2.goto(gw.url + `/console/#/job/${ids.b}`);
  while (live.n < 3) await p2.waitForResponse((r) => r.url().includes(`/api/job?id=${ids.b}`), { timeout: 30000 });
  assert.ok(done.answered, 'the finished job was shown');
  assert.equal(done.n, 0, 'a finished job is not asked for again');
  done.stop();
  live.stop();
  await ctx.close();
});

test('one refresh loop: Pause and Resume clicks start none; Pause asks first', async () => {
  await page.goto(gw.url + '/console/#/overview');
  const btn = rowSel('email.send') + ' button';
  // Refused at the confirmation: nothing paused.
  page.removeAllListeners('dialog');
  page.once('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await page.waitForSelector(btn);
  const n0 = dialogs.length;
  await page.click(btn);
  while (dialogs.length === n0) await new Promise((r) => setImmediate(r));
  assert.match(dialogs.at(-1), /^Pause topic email\.send\?/);
  assert.equal(psql(db, `SELECT count(*) FROM topic_policy WHERE topic = 'email.send' AND paused`), '0');
  page.on('dialog', (d) => { dialogs.push(d.message()); d.accept(); });
  for (let i = 0; i < 2; i++) {
    await page.click(btn);
    await page.waitForFunction((b) => document.querySelector(b)?.textContent === 'Resume', { timeout: 30000 }, btn);
    await page.click(btn);
    await page.waitForFunction((b) => document.querySelector(b)?.textContent === 'Pause', { timeout: 30000 }, btn);
  }
  // 10 s of one loop every 2 s is about 5 overview requests; each extra loop would add 5.
  const c = counter(page, '/api/overview');
  const t0 = Date.now();
  await page.waitForFunction((t) => Date.now() - t >= 10000, { timeout: 30000, polling: 500 }, t0);
  c.stop();
  assert.ok(c.n >= 1 && c.n <= 7, `${c.n} overview requests in 10 s after 4 clicks: one loop`);
});

test('errors keep their line breaks in a scrolling block; bidi controls are shown escaped', async () => {
  await page.goto(gw.url + `/console/#/job/${ids.long}`);
  await page.waitForSelector('#job-error');
  const e = await page.$eval('#job-error', (x) => ({ text: x.textContent, ws: getComputedStyle(x).whiteSpace,
    scroll: x.scrollHeight > x.clientHeight, oy: getComputedStyle(x).overflowY, lines: x.getClientRects().length }));
  assert.match(e.text, /^first line\nsecond \\u202Eline\nline 1: /);
  assert.equal(e.ws, 'pre-wrap');
  assert.ok(e.scroll && e.oy === 'auto', 'the block scrolls');
  const raw = /[\u200E\u200F\u202A-\u202E\u2066-\u2069]/;
  for (const hash of [`#/job/${ids.long}`, `#/jobs?topic=${T128}`]) {
    await page.goto(gw.url + '/console/' + hash);
    await page.waitForFunction(() => /\\u202E/.test(document.querySelector('#view').textContent), { timeout: 30000 });
    const shown = await page.evaluate(() => {
      const titles = [...document.querySelectorAll('#view [title]')].map((x) => x.title).join(' ');
      return document.querySelector('#view').textContent + titles;
    });
    assert.doesNotMatch(shown, raw, `${hash}: a bidi control is shown raw`);
  }
  assert.match(await page.$eval('#view', (x) => x.textContent), /key-k+-\\u202Eend/);
});

test('key search without a topic, filters in the URL, Back returns to the last filters', async () => {
  await page.goto(gw.url + '/console/#/jobs');
  await page.waitForSelector('#jobs-filter');
  await page.type('#f-key', 'shared-key');
  await page.click('#jobs-filter button[type=submit]');
  await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 2, { timeout: 30000 });
  assert.deepEqual(await page.$$eval('#jobs tbody tr', (r) => r.map((x) => x.dataset.id)), [ids.b, ids.a]);
  assert.equal(await page.evaluate(() => location.hash), '#/jobs?key=shared-key');
  // A shared link opens the same list, its fields filled.
  const ctx = await browser.createBrowserContext();
  const p = await ctx.newPage();
  await signIn(p);
  await p.goto(gw.url + `/console/#/jobs?topic=${T128}&state=dead`);
  await p.waitForFunction((id) => document.querySelectorAll('#jobs tbody tr').length === 1
    && document.querySelector('#jobs tbody tr').dataset.id === id, { timeout: 30000 }, ids.long);
  assert.deepEqual(await p.evaluate(() => [document.querySelector('#f-topic').value, document.querySelector('#f-state').value]), [T128, 'dead']);
  await ctx.close();
  // Another filter, then Back: the key's list again.
  await page.$eval('#f-key', (x) => { x.value = ''; });
  await page.select('#f-state', 'done');
  await page.click('#jobs-filter button[type=submit]');
  await page.waitForFunction((id) => document.querySelector('#jobs tbody tr')?.dataset.id === id, { timeout: 30000 }, ids.done);
  assert.equal(await page.evaluate(() => location.hash), '#/jobs?state=done');
  await page.goBack();
  await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 2, { timeout: 30000 });
  assert.equal(await page.$eval('#f-key', (x) => x.value), 'shared-key');
});

test('times are UTC, labelled, the time filters included', async () => {
  await page.goto(gw.url + '/console/#/jobs?after=2026-03-01T10:30');
  const sent = page.waitForRequest((r) => r.url().includes('/api/jobs?'), { timeout: 30000 });
  await page.reload();
  const url = new URL((await sent).url());
  assert.equal(url.searchParams.get('created_after_ms'), String(Date.UTC(2026, 2, 1, 10, 30)), 'the field is read as UTC');
  await page.waitForSelector('#f-after');
  assert.match(await page.$eval('label[for="f-after"]', (l) => l.textContent), /\(UTC\)/);
  assert.match(await page.$eval('label[for="f-before"]', (l) => l.textContent), /\(UTC\)/);
  await page.goto(gw.url + `/console/#/job/${ids.a}`);
  await page.waitForSelector('#job-created');
  assert.match(await page.$eval('#job-created', (x) => x.textContent), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/);
});

test('a session that ends says so and keeps the half-filled form', async () => {
  await page.goto(gw.url + '/console/#/enqueue');
  await page.waitForSelector('#enqueue-form');
  await page.type('#e-topic', 'kept.topic');
  await page.$eval('#e-payload', (x) => { x.value = '{"kept": true}'; });
  // The session ends under the page (as at its expiry: console_test checks the gateway's side).
  await page.deleteCookie({ name: 'brooq_session', url: gw.url + '/console/' });
  await page.click('#enqueue-form button[type=submit]');
  await page.waitForSelector('#signin', { visible: true });
  assert.match(await page.$eval('#signin-note', (x) => x.textContent), /session has ended/);
  await page.type('#token', gw.admin);
  await page.click('#signin-form button[type=submit]');
  await page.waitForSelector('#enqueue-form', { visible: true });
  assert.equal(await page.$eval('#e-topic', (x) => x.value), 'kept.topic');
  assert.equal(await page.$eval('#e-payload', (x) => x.value), '{"kept": true}');
  await page.click('#enqueue-form button[type=submit]');
  await page.waitForSelector('#enqueued-link');
  assert.equal(psql(db, `SELECT count(*) FROM job WHERE topic = 'kept.topic'`), '1');
});
