// SPDX-License-Identifier: MIT
// The console's history charts and workers view (issue 28.4, 28.7) in a real browser: jobs run by
// example-worker through the gateway appear in the throughput, backlog and wait charts (SVG drawn
// by the page), and a worker whose lease ran out is listed with the job marked as waiting for the
// reaper, on the workers view, the job page and the job list. Screenshots go to
// $BROOQ_TEST_OUT_DIR (build/tests/console/). Every wait is for a state, never for a time.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { assertCleanLog, axe, binDir, clickWhen, createDb, dropDb, launchBrowser, outDir, psql, sleep, startGateway } from './lib.mjs';

let db, gw, browser, page, worker;
let expired; // a processing job whose lease ran out, held by "ghost-worker"

// Polls fn (sync or async) every 100 ms until it returns true; fails after timeoutMs.
async function until(what, fn, timeoutMs = 60000) {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await sleep(100);
  }
}

before(async () => {
  fs.mkdirSync(outDir, { recursive: true });
  db = createDb();
  // The reaper runs at start, then hourly: a lease planted expired after its first round
  // stays expired for the test. This one, planted before the start, says when that round
  // has run: it is taken back.
  psql(db, `INSERT INTO job (topic, state, attempts, locked_by, locked_until, lease_token) VALUES ('demo.ghost', 'processing', 1, 'sentinel', now() - interval '1 second', gen_random_uuid())`);
  gw = await startGateway(db, { BROOQ_REAPER_INTERVAL: '1h' });
  browser = await launchBrowser();
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.on('dialog', (d) => d.accept());
  await page.goto(gw.url + '/console/', { waitUntil: 'networkidle0' });
  await page.type('#token', gw.admin);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#nav', { visible: true });
});

after(async () => {
  if (worker) worker.kill('SIGTERM');
  if (browser) await browser.close();
  if (gw) {
    const { exited, log } = await gw.stop();
    assertCleanLog(log);
    assert.deepEqual(exited, { code: 0, sig: null }, 'gateway exit\n' + log);
  }
  if (db) dropDb(db);
});

test('jobs run through the gateway are charted per minute over the last hour and day', async () => {
  const dir = fs.mkdtempSync(path.join(gw.dir, 'w-'));
  fs.writeFileSync(path.join(dir, 'token'), gw.worker, { mode: 0o600 });
  psql(db, `INSERT INTO job (topic, payload) SELECT 'demo.hello', '{}' FROM generate_series(1, 25)`);
  // A backlog that stays: delayed jobs of the same topic (pending, not ready).
  psql(db, `INSERT INTO job (topic, payload, available_at) SELECT 'demo.hello', '{}', now() + interval '1 day' FROM generate_series(1, 4)`);
  worker = spawn(path.join(binDir, 'example-worker'), [], {
    env: { ...process.env, BROOQ_URL: `ipc://${gw.dir}/gw.sock`, BROOQ_TOKEN_FILE: path.join(dir, 'token') },
    stdio: 'ignore',
  });
  await until('the 25 jobs done', () => psql(db, `SELECT count(*) FROM job WHERE state = 'done'`) === '25');
  // The gateway's history thread writes every 10 s: wait for its row, then for the page.
  await until('the starts in job_history', () => Number(psql(db, `SELECT coalesce(sum(started), 0) FROM job_history WHERE topic = 'demo.hello'`)) >= 25);
  await until('the backlog in job_history', () => psql(db, `SELECT count(*) FROM job_history WHERE topic = 'demo.hello' AND pending = 4`) !== '0');
  await page.goto(gw.url + '/console/#/history?topic=demo.hello&window=1h');
  await page.waitForFunction(() => {
    const d = document.querySelector('#chart-throughput desc');
    return d && /^Highest/.test(d.textContent) && document.querySelector('#chart-throughput path[data-series="started"], #chart-throughput circle');
  }, { timeout: 30000 });
  // Three charts, each an SVG image with a title and a text summary.
  for (const id of ['chart-throughput', 'chart-depth', 'chart-wait']) {
    const c = await page.$eval('#' + id, (s) => ({ role: s.getAttribute('role'), title: s.querySelector('title').textContent, desc: s.querySelector('desc').textContent, marks: s.querySelectorAll('path.line, circle.dot').length }));
    assert.equal(c.role, 'img');
    assert.ok(c.marks > 0, id + ' draws nothing: ' + JSON.stringify(c));
    assert.match(c.desc, /^Highest /, id);
  }
  // 25 started in (at most) two minutes: the highest minute holds at least 13.
  const high = await page.$eval('#chart-throughput desc', (d) => Number(/Highest ([0-9.]+)/.exec(d.textContent)[1]));
  assert.ok(high >= 13 && high <= 25, 'highest started per minute ' + high);
  assert.match(await page.$eval('#chart-depth desc', (d) => d.textContent), /pending 4, ready 0/);
  assert.match(await page.$eval('#chart-wait desc', (d) => d.textContent), /p50 [0-9.]+ (ms|s)/);
  // Sixty one-minute points: the x axis runs an hour, labelled in UTC.
  const hours = await page.$$eval('#chart-throughput text.axis', (t) => t.map((x) => x.textContent).filter((x) => /^\d\d:\d\d$/.test(x)));
  assert.equal(hours.length, 3);
  await page.screenshot({ path: path.join(outDir, 'history-1h-1280.png'), fullPage: true });
  assert.deepEqual(await axe(page), [], 'axe on the history page');

  await clickWhen(page, 'button[data-window="24h"]', /24 hours/);
  await page.waitForFunction(() => location.hash.includes('window=24h') &&
    document.querySelector('button[data-window="24h"]').getAttribute('aria-pressed') === 'true' &&
    /^Highest/.test((document.querySelector('#chart-throughput desc') || {}).textContent || ''), { timeout: 30000 });
  // Five-minute steps: the same 25 starts are at most 5 per minute on average.
  const dayHigh = await page.$eval('#chart-throughput desc', (d) => Number(/Highest ([0-9.]+)/.exec(d.textContent)[1]));
  assert.ok(dayHigh > 0 && dayHigh <= 5, 'highest started per minute over 5 minutes ' + dayHigh);
  await page.screenshot({ path: path.join(outDir, 'history-24h-1280.png'), fullPage: true });
  await page.setViewport({ width: 375, height: 812 });
  await page.screenshot({ path: path.join(outDir, 'history-24h-375.png'), fullPage: true });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(wide <= 375, 'the charts fit 375 px: ' + wide);
  await page.setViewport({ width: 1280, height: 900 });
});

test('a worker whose lease ran out is listed, and its job marked as waiting for the reaper', async () => {
  await until('the reaper\'s first round', () => psql(db, `SELECT count(*) FROM job WHERE locked_by = 'sentinel'`) === '0');
  expired = psql(db, `INSERT INTO job (topic, state, attempts, locked_by, locked_until, lease_token, claimed_at) VALUES ('demo.ghost', 'processing', 1, 'ghost-worker', now() - interval '30 seconds', gen_random_uuid(), now() - interval '3 minutes') RETURNING id`);
  await page.goto(gw.url + '/console/#/workers');
  await page.waitForSelector('#workers tr[data-worker="ghost-worker"]');
  const row = await page.$eval('#workers tr[data-worker="ghost-worker"]', (r) => r.textContent);
  assert.match(row, /demo\.ghost/);
  assert.match(row, /1 expired/);
  await page.screenshot({ path: path.join(outDir, 'workers-1280.png'), fullPage: true });
  assert.deepEqual(await axe(page), [], 'axe on the workers page');

  await clickWhen(page, '#workers tr[data-worker="ghost-worker"] a', /ghost-worker/);
  await page.waitForSelector(`#worker-jobs tr[data-id="${expired}"] .badge.expired`);
  assert.match(await page.$eval(`#worker-jobs tr[data-id="${expired}"]`, (r) => r.textContent), /lease expired, waiting for the reaper/);

  await page.goto(gw.url + `/console/#/job/${expired}`);
  await page.waitForFunction(() => /lease expired, waiting for the reaper/.test((document.querySelector('#job-state') || {}).textContent || ''));
  await page.goto(gw.url + '/console/#/jobs?topic=demo.ghost&state=processing');
  await page.waitForSelector(`#jobs tr[data-id="${expired}"] .badge.expired`);
  // A job whose lease still runs is not marked: a worker that keeps beating its lease.
  const live = psql(db, `INSERT INTO job (topic, state, attempts, locked_by, locked_until, lease_token, claimed_at) VALUES ('demo.ghost', 'processing', 1, 'live-worker', now() + interval '5 minutes', gen_random_uuid(), now()) RETURNING id`);
  await page.goto(gw.url + `/console/#/job/${live}`);
  await page.waitForFunction((id) => document.querySelector('#view-title') && document.querySelector('#view-title').textContent === 'Job ' + id && document.querySelector('#job-state'), {}, live);
  assert.doesNotMatch(await page.$eval('#job-state', (e) => e.textContent), /expired/);
});
