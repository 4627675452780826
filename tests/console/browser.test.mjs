// SPDX-License-Identifier: MIT
// The web console in a real browser: Debian's chromium, driven by puppeteer-core, against a real
// gateway and PostgreSQL. Screenshots go to $BROOQ_TEST_OUT_DIR (build/tests/console/).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { assertCleanLog, axe, clickWhen, createDb, dropDb, launchBrowser, outDir, psql, sleep, startGateway } from './lib.mjs';

let db, gw, browser, page;
const ids = {}; // jobs seeded by SQL

before(async () => {
  fs.mkdirSync(outDir, { recursive: true });
  db = createDb();
  // Jobs as a producer would insert them (the schema is a public contract).
  ids.a = psql(db, `INSERT INTO job (topic, payload) VALUES ('email.send', '{"to":"a@example.org","n":1}') RETURNING id`);
  ids.b = psql(db, `INSERT INTO job (topic, payload) VALUES ('email.send', '{"to":"b@example.org"}') RETURNING id`);
  ids.c = psql(db, `INSERT INTO job (topic, payload) VALUES ('email.send', '{"to":"c@example.org"}') RETURNING id`);
  psql(db, `INSERT INTO job (topic, payload) VALUES ('report.build', '{"month":"2026-11"}')`);
  gw = await startGateway(db);
  browser = await launchBrowser();
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.on('dialog', (d) => d.accept()); // the page confirms actions with window.confirm
});

after(async () => {
  if (browser) await browser.close();
  if (gw) {
    const { exited, log } = await gw.stop();
    assertCleanLog(log);
    assert.deepEqual(exited, { code: 0, sig: null }, 'gateway exit\n' + log);
    // Actions are logged with who did it, never with the token.
    assert.ok(!log.includes(gw.admin) && !log.includes(gw.worker), 'a token is in the log');
  }
  if (db) dropDb(db);
});

async function signIn(p, token) {
  await p.goto(gw.url + '/console/', { waitUntil: 'networkidle0' });
  await p.waitForSelector('#token', { visible: true });
  await p.type('#token', token);
  await p.click('#signin-form button[type=submit]');
}

async function textOf(p, sel) {
  return p.$eval(sel, (e) => e.textContent.trim());
}

test('a wrong token is refused, and no cookie is set', async () => {
  await signIn(page, 'not-a-token-' + 'x'.repeat(40));
  await page.waitForFunction(() => document.querySelector('#signin-error').textContent.length > 0);
  assert.match(await textOf(page, '#signin-error'), /refused/);
  assert.equal(await page.$eval('#nav', (e) => e.hidden), true);
  assert.deepEqual(await page.cookies(), []);
  assert.match(gw.log(), /console_sign_in_failed reason=unknown_token/);
});

test('sign in with the admin token: an HttpOnly SameSite=Strict session cookie', async () => {
  await signIn(page, gw.admin);
  await page.waitForSelector('#nav', { visible: true });
  const cookies = await page.cookies();
  assert.equal(cookies.length, 1);
  assert.equal(cookies[0].name, 'brooq_session');
  assert.equal(cookies[0].httpOnly, true);
  assert.equal(cookies[0].sameSite, 'Strict');
  assert.ok(cookies[0].expires > Date.now() / 1000, 'the cookie has an expiry');
  // The page's script cannot read it.
  assert.equal(await page.evaluate(() => document.cookie), '');
  assert.match(await textOf(page, '#role'), /admin/);
});

test('the overview shows a topic\'s depth', async () => {
  await page.waitForFunction(
    () => document.querySelector('#topics tr[data-topic="email.send"] td[data-state="pending"]')?.textContent === '3',
    { timeout: 30000 });
  assert.equal(await textOf(page, '#topics tr[data-topic="report.build"] td[data-state="pending"]'), '1');
});

test('open a job, cancel it, and see its row change in PostgreSQL', async () => {
  await page.type('#find-id', ids.a);
  await page.click('#find-job button[type=submit]');
  await page.waitForFunction((id) => location.hash === '#/job/' + id, {}, ids.a);
  await page.waitForSelector('#job-state .badge');
  assert.equal(await textOf(page, '#job-state'), 'pending');
  assert.match(await page.$eval('#job pre[aria-label="Payload"]', (e) => e.textContent), /"to": "a@example.org"/);
  assert.equal(psql(db, `SELECT state FROM job WHERE id = ${ids.a}`), 'pending');
  await clickWhen(page, '#cancel-job'); // a job's page redraws every 3 s: see clickWhen
  await page.waitForFunction(() => document.querySelector('#job-state')?.textContent === 'canceled', { timeout: 30000 });
  assert.equal(psql(db, `SELECT state FROM job WHERE id = ${ids.a}`), 'canceled');
  assert.match(gw.log(), new RegExp(`console_action action=cancel id=${ids.a} state=canceled canceled=true role=admin token_fp=[0-9a-f]{8}`));
});

test('retry the canceled job from its page; delete a done job from its page', async () => {
  // ids.a was canceled by the test above.
  await page.goto(gw.url + `/console/#/job/${ids.a}`);
  await clickWhen(page, '#retry-job');
  // The page names the new job and links it (issue 28.8), never a bare "done".
  await page.waitForSelector('#retry-link', { timeout: 30000 });
  const retry = psql(db, `SELECT id FROM job WHERE retry_of = ${ids.a} AND state = 'pending'`);
  assert.match(retry, /^\d+$/, 'a new pending job re-runs it');
  assert.equal(await textOf(page, '#job-done'), `Retried: new job ${retry}.`);
  assert.equal(await page.$eval('#retry-link', (a) => a.getAttribute('href')), `#/job/${retry}`);
  // Asked again: nothing is created, and the page says which job already re-runs it.
  await clickWhen(page, '#retry-job');
  await page.waitForFunction(() => /^Already retried/.test(document.querySelector('#job-done')?.textContent || ''), { timeout: 30000 });
  assert.equal(await textOf(page, '#job-done'), `Already retried: job ${retry} (no job created).`);
  assert.equal(psql(db, `SELECT count(*) FROM job WHERE retry_of = ${ids.a}`), '1');
  assert.equal(psql(db, `SELECT state FROM job WHERE id = ${ids.a}`), 'canceled', 'the original is kept');
  assert.match(gw.log(), new RegExp(`console_action action=retry id=${ids.a} topic= retried=1 role=admin`));
  const done = psql(db, `INSERT INTO job (topic, payload, state, result) VALUES ('report.build', '{}', 'done', '{"pages": 3}') RETURNING id`);
  await page.goto(gw.url + `/console/#/job/${done}`);
  await page.waitForSelector('#delete-job');
  assert.match(await page.$eval('#job', (e) => e.textContent), /"pages": 3/, 'the result is shown');
  await clickWhen(page, '#delete-job');
  await page.waitForFunction(() => location.hash === '#/overview', { timeout: 30000 });
  assert.equal(psql(db, `SELECT count(*) FROM job WHERE id = ${done}`), '0');
});

test('filter the job list by topic and state, and page on with the cursor', async () => {
  psql(db, `INSERT INTO job (topic, payload, state) SELECT 'list.me', '{}', CASE WHEN g % 3 = 0 THEN 'canceled' ELSE 'pending' END FROM generate_series(1, 180) g`);
  psql(db, `INSERT INTO job (topic, payload, state) VALUES ('other', '{}', 'canceled')`);
  const want = psql(db, `SELECT string_agg(id::text, ',' ORDER BY id DESC) FROM job WHERE topic = 'list.me' AND state = 'canceled'`).split(',');
  assert.equal(want.length, 60);
  await page.goto(gw.url + '/console/#/jobs');
  await page.waitForSelector('#jobs-filter');
  await page.type('#f-topic', 'list.me');
  await page.select('#f-state', 'canceled');
  await page.click('#jobs-filter button[type=submit]');
  await page.waitForFunction((first) => {
    const rows = document.querySelectorAll('#jobs tbody tr');
    return rows.length === 50 && rows[0].dataset.id === first;
  }, {}, want[0]);
  let ids = await page.$$eval('#jobs tbody tr', (rows) => rows.map((r) => r.dataset.id));
  assert.deepEqual(ids, want.slice(0, 50), 'the first page: the newest 50, newest first');
  await page.click('#more');
  await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 60);
  ids = await page.$$eval('#jobs tbody tr', (rows) => rows.map((r) => r.dataset.id));
  assert.deepEqual(ids, want, 'the second page follows the first');
  assert.equal(await page.$('#more'), null, 'no page after the last');
});

test('enqueue a job from the page', async () => {
  await page.goto(gw.url + '/console/#/enqueue');
  await page.waitForSelector('#enqueue-form');
  await page.type('#e-topic', 'page.made');
  await page.$eval('#e-payload', (e) => { e.value = ''; });
  await page.type('#e-payload', '{"from":"the console"}');
  await page.type('#e-key', 'console-key-1');
  await page.click('#enqueue-form button[type=submit]');
  await page.waitForSelector('#enqueued-link');
  const id = (await textOf(page, '#enqueued-link')).replace('job ', '');
  assert.equal(psql(db, `SELECT topic || ' ' || payload::text || ' ' || idempotency_key || ' ' || state FROM job WHERE id = ${id}`),
    'page.made {"from": "the console"} console-key-1 pending');
  // A refused payload shows the RPC's own message and writes nothing.
  await page.$eval('#e-payload', (e) => { e.value = '{not json'; });
  await page.click('#enqueue-form button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#enqueue-error').textContent.includes('payload'));
  assert.equal(psql(db, `SELECT count(*) FROM job WHERE topic = 'page.made'`), '1');
});

// The pages read the API's JSON form (docs/protocol.md §11): a schedule's cron or every_ms,
// tz and next_slot_ms; a policy's max_running and rate_per_s.
test('the schedules page and a limited topic read the JSON form\'s names', async () => {
  psql(db, `INSERT INTO schedule (name, topic, cron, tz, misfire, catch_up_max, next_slot)
            VALUES ('nightly', 'report.build', '30 2 * * *', 'Europe/Berlin', 'catch_up', 3, '2030-01-01T01:30:00Z');
            INSERT INTO schedule (name, topic, every_ms, next_slot) VALUES ('beat', 'ping', 30000, '2030-01-01T00:00:30Z');
            INSERT INTO topic_policy (topic, max_running, rate_per_s) VALUES ('report.build', 2, 7)`);
  await page.goto(gw.url + '/console/#/schedules');
  await page.waitForFunction(() => document.querySelectorAll('#schedules tbody tr').length === 2, { timeout: 30000 });
  const rows = await page.$$eval('#schedules tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.deepEqual(rows, [
    ['beat', 'ping', 'every 30 s', '', '2030-01-01 00:00:30.000 UTC', '—'],
    ['nightly', 'report.build', '30 2 * * *', 'Europe/Berlin', '2030-01-01 01:30:00.000 UTC', '—'],
  ]);
  await page.goto(gw.url + '/console/#/overview');
  await page.waitForFunction(
    () => /≤2 running ≤7\/s/.test(document.querySelector('#topics tr[data-topic="report.build"]')?.textContent || ''),
    { timeout: 30000 });
  psql(db, `DELETE FROM schedule; DELETE FROM topic_policy`);
});

test('a POST without the CSRF token is refused and changes nothing', async () => {
  const status = await page.evaluate(async (id) => {
    const r = await fetch('/console/api/cancel', { method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'id=' + id });
    return r.status;
  }, ids.b);
  assert.equal(status, 403);
  assert.equal(psql(db, `SELECT state FROM job WHERE id = ${ids.b}`), 'pending');
  // With it, the same request goes through: the refusal was the missing token.
  const ok = await page.evaluate(async (id) => {
    const s = await (await fetch('/console/api/session')).json();
    const r = await fetch('/console/api/cancel', { method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-CSRF-Token': s.csrf }, body: 'id=' + id });
    return r.status;
  }, ids.c);
  assert.equal(ok, 200);
  assert.equal(psql(db, `SELECT state FROM job WHERE id = ${ids.c}`), 'canceled');
});

test('screenshots of the overview and a job page at 1280 and 375 px', async () => {
  for (const width of [1280, 375]) {
    await page.setViewport({ width, height: width === 375 ? 812 : 900 });
    await page.goto(gw.url + '/console/#/overview', { waitUntil: 'networkidle0' });
    await page.waitForSelector('#topics tr[data-topic="email.send"]');
    const ov = path.join(outDir, `overview-${width}.png`);
    await page.screenshot({ path: ov, fullPage: true });
    await page.goto(gw.url + `/console/#/job/${ids.a}`);
    await page.waitForSelector('#job-state .badge');
    const jp = path.join(outDir, `job-${width}.png`);
    await page.screenshot({ path: jp, fullPage: true });
    for (const f of [ov, jp]) assert.ok(fs.statSync(f).size > 5000, f + ' is written');
    // Nothing wider than the screen at 375 px but the tables' own scroll regions.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    assert.equal(overflow, false, `page wider than ${width} px`);
  }
  await page.setViewport({ width: 1280, height: 900 });
});

test('keyboard only: skip link, sign-in, navigation, a form', async () => {
  const ctx = await browser.createBrowserContext();
  const p = await ctx.newPage();
  await p.goto(gw.url + '/console/', { waitUntil: 'networkidle0' });
  const focused = () => p.evaluate(() => document.activeElement.id || document.activeElement.textContent.trim());
  await p.keyboard.press('Tab');
  assert.equal(await focused(), 'Skip to content');
  await p.keyboard.press('Tab');
  assert.equal(await focused(), 'token');
  await p.keyboard.type(gw.admin);
  await p.keyboard.press('Enter');
  await p.waitForSelector('#nav', { visible: true });
  // From the top of the page (the skip link), Tab walks the navigation in order.
  await p.focus('.skip');
  const seen = [];
  for (let i = 0; i < 3; i++) {
    await p.keyboard.press('Tab');
    seen.push(await focused());
  }
  assert.deepEqual(seen, ['Overview', 'Jobs', 'Enqueue']);
  await p.keyboard.press('Enter');
  await p.waitForSelector('#enqueue-form');
  await p.focus('#e-topic');
  await p.keyboard.type('kbd.topic');
  await p.keyboard.press('Tab');
  assert.equal(await focused(), 'e-payload');
  // The skip link moves the focus to the content.
  await p.focus('.skip');
  await p.keyboard.press('Enter');
  assert.equal(await focused(), 'main');
  await p.close();
  await ctx.close();
});

test('axe-core finds no accessibility violation on the sign-in, overview, job and enqueue pages', async () => {
  const ctx = await browser.createBrowserContext();
  const p = await ctx.newPage();
  await p.setViewport({ width: 1280, height: 900 });
  await p.goto(gw.url + '/console/', { waitUntil: 'networkidle0' });
  await p.waitForSelector('#token', { visible: true });
  const report = {};
  report.signin = await axe(p);
  await p.type('#token', gw.admin);
  await p.keyboard.press('Enter');
  await p.waitForSelector('#topics');
  report.overview = await axe(p);
  await p.goto(gw.url + `/console/#/job/${ids.b}`);
  await p.waitForSelector('#job-state .badge');
  report.job = await axe(p);
  await p.goto(gw.url + '/console/#/enqueue');
  await p.waitForSelector('#enqueue-form');
  report.enqueue = await axe(p);
  await p.goto(gw.url + '/console/#/jobs');
  await p.waitForSelector('#jobs-filter');
  report.jobs = await axe(p);
  fs.writeFileSync(path.join(outDir, 'axe.json'), JSON.stringify(report, null, 2));
  for (const [name, v] of Object.entries(report)) assert.deepEqual(v, [], `${name}: ${JSON.stringify(v, null, 1)}`);
  await ctx.close();
});

test('a worker token signs in read-only', async () => {
  const ctx = await browser.createBrowserContext();
  const p = await ctx.newPage();
  p.on('dialog', (d) => d.accept());
  await signIn(p, gw.worker);
  await p.waitForSelector('#nav', { visible: true });
  assert.match(await textOf(p, '#role'), /worker.*read-only/);
  await p.goto(gw.url + `/console/#/job/${ids.b}`);
  await p.waitForSelector('#job-state .badge');
  assert.equal(await p.$('#cancel-job'), null, 'no cancel button');
  const status = await p.evaluate(async (id) => {
    const s = await (await fetch('/console/api/session')).json();
    const r = await fetch('/console/api/cancel', { method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-CSRF-Token': s.csrf }, body: 'id=' + id });
    return r.status;
  }, ids.b);
  assert.equal(status, 403);
  assert.equal(psql(db, `SELECT state FROM job WHERE id = ${ids.b}`), 'pending');
  await ctx.close();
});

test('signing out ends the session', async () => {
  await page.goto(gw.url + '/console/#/overview', { waitUntil: 'networkidle0' });
  await page.waitForSelector('#signout', { visible: true });
  await page.click('#signout');
  await page.waitForSelector('#token', { visible: true });
  const status = await page.evaluate(async () => (await fetch('/console/api/overview')).status);
  assert.equal(status, 401);
  await sleep(10);
});
