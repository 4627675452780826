// SPDX-License-Identifier: MIT
// The console's bulk actions (issue 28.5) and each attempt's error (issue 28.6) in a real
// browser: jobs selected in the list or all a filter matches, counted and confirmed first,
// done in batches with progress and a stop; the job page's errors by attempt with their
// times and line breaks. Every wait is for the state asserted, never for a fixed time.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { assertCleanLog, axe, createDb, dropDb, launchBrowser, outDir, psql, startGateway } from './lib.mjs';

let db, gw, browser, page;

before(async () => {
  fs.mkdirSync(outDir, { recursive: true });
  db = createDb();
  gw = await startGateway(db);
  browser = await launchBrowser();
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  await page.goto(gw.url + '/console/', { waitUntil: 'networkidle0' });
  await page.type('#token', gw.admin);
  await page.click('#signin-form button[type=submit]');
  await page.waitForSelector('#nav', { visible: true });
});

after(async () => {
  if (browser) await browser.close();
  if (gw) {
    const { exited, log } = await gw.stop();
    assertCleanLog(log);
    assert.deepEqual(exited, { code: 0, sig: null }, 'gateway exit\n' + log);
    assert.ok(!log.includes(gw.admin) && !log.includes(gw.worker), 'a token is in the log');
  }
  if (db) dropDb(db);
});

const count = (where) => Number(psql(db, `SELECT count(*) FROM job WHERE ${where}`));
const textOf = (sel) => page.$eval(sel, (e) => e.textContent);

// The job list filtered by topic (and state), once its rows are drawn with their checkboxes.
async function listed(topic, state, rows) {
  await page.goto(gw.url + '/console/#/jobs');
  await page.waitForSelector('#jobs-filter');
  await page.$eval('#f-topic', (e, t) => { e.value = t; }, topic);
  await page.select('#f-state', state);
  await page.click('#jobs-filter button[type=submit]');
  await page.waitForFunction((t, n) => {
    const trs = [...document.querySelectorAll('#jobs tbody tr')];
    return trs.length === n && trs.every((tr) => tr.cells[2].textContent === t && tr.querySelector('.pick input'));
  }, {}, topic, rows);
}

// Waits for the bulk progress line to say the run ended; returns it.
async function ended() {
  await page.waitForFunction(() => /(Finished|Stopped)/.test(document.querySelector('#bulk-progress').textContent), { timeout: 120000 });
  await page.waitForFunction(() => !document.querySelector('#bulk-all').disabled);
  return textOf('#bulk-progress');
}

test('each attempt\'s error is shown with its attempt and time, its line breaks kept in a scrollable block', async () => {
  const id = psql(db, `INSERT INTO job (topic, state, attempts, last_error, errors) VALUES ('err.page', 'dead', 2, 'second',
    '[{"attempt": 1, "at_ms": 1796113474000, "error": "Traceback:\\n  line 1\\n  line 2"},
      {"attempt": 2, "at_ms": 1796113476895, "error": "second"}]') RETURNING id`);
  await page.goto(gw.url + '/console/#/job/' + id);
  await page.waitForFunction(() => document.querySelectorAll('#attempt-errors li').length === 2);
  const items = await page.$$eval('#attempt-errors li', (lis) => lis.map((li) => ({
    head: li.querySelector('.attempt-head').textContent,
    text: li.querySelector('pre').textContent,
    white: getComputedStyle(li.querySelector('pre')).whiteSpace,
    overflow: getComputedStyle(li.querySelector('pre')).overflowY,
  })));
  assert.deepEqual(items.map((i) => i.head), ['Attempt 1, 2026-12-01 08:24:34.000 UTC', 'Attempt 2, 2026-12-01 08:24:36.895 UTC']);
  assert.equal(items[0].text, 'Traceback:\n  line 1\n  line 2');
  assert.equal(items[0].white, 'pre-wrap');
  assert.equal(items[0].overflow, 'auto');
  assert.deepEqual(await axe(page), []);
  await page.screenshot({ path: path.join(outDir, 'job-errors-1280.png'), fullPage: true });
  // A job without errors has no such section.
  const none = psql(db, `INSERT INTO job (topic) VALUES ('err.page') RETURNING id`);
  await page.goto(gw.url + '/console/#/job/' + none);
  await page.waitForFunction((i) => document.querySelector('#view-title')?.textContent === 'Job ' + i && document.querySelector('#job dl'), {}, none);
  assert.equal(await page.$('#attempt-errors'), null);
});

test('the selected jobs: a count and a confirmation, then the action; jobs it does not apply to are skipped', async () => {
  psql(db, `INSERT INTO job (topic, state) SELECT 'bulk.sel', 'dead' FROM generate_series(1, 4)`);
  const pending = psql(db, `INSERT INTO job (topic) VALUES ('bulk.sel') RETURNING id`);
  await listed('bulk.sel', '', 5);
  // The pending job (newest: the first row) and the next two dead ones.
  const picked = await page.$$eval('#jobs tbody tr', (trs) => trs.slice(0, 3).map((tr) => { tr.querySelector('.pick input').click(); return tr.dataset.id; }));
  assert.equal(picked[0], pending);
  await page.waitForFunction(() => document.querySelector('#bulk-selected').textContent === 'Apply to 3 selected');
  await page.select('#bulk-action', 'delete');
  await page.click('#bulk-selected');
  await page.waitForSelector('#bulk-question', { visible: true });
  assert.match(await textOf('#bulk-question'), /^Delete 3 selected jobs\? Only jobs that are done, dead or canceled change/);
  assert.equal(count(`topic = 'bulk.sel'`), 5, 'nothing happens before the confirmation');
  assert.deepEqual(await axe(page), []);
  await page.screenshot({ path: path.join(outDir, 'jobs-bulk-confirm-1280.png'), fullPage: true });
  await page.click('#bulk-go');
  assert.match(await ended(), /^Delete: 3 of 3 handled, 2 changed, 1 skipped .*Finished\.$/);
  assert.equal(count(`topic = 'bulk.sel'`), 3);
  assert.equal(count(`id = ${pending} AND state = 'pending'`), 1);
  assert.equal(count(`id IN (${picked.slice(1).join(',')})`), 0);
  // The list is drawn again without the deleted jobs.
  await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 3);
});

test('all jobs matching the filter: counted, confirmed, done in batches with progress, audited', async () => {
  psql(db, `INSERT INTO job (topic, state) SELECT 'bulk.all', 'dead' FROM generate_series(1, 250)`);
  psql(db, `INSERT INTO job (topic, state) SELECT 'bulk.else', 'dead' FROM generate_series(1, 10)`);
  await listed('bulk.all', 'dead', 50);
  await page.select('#bulk-action', 'retry');
  await page.click('#bulk-all');
  await page.waitForSelector('#bulk-question', { visible: true });
  assert.match(await textOf('#bulk-question'), /^Retry all jobs matching the filter \(topic bulk\.all, state dead\)\? 250 jobs match now\./);
  await page.click('#bulk-go');
  assert.match(await ended(), /^Retry: 250 of 250 handled, 250 changed, 0 skipped .*Finished\.$/);
  assert.equal(count(`topic = 'bulk.all' AND retry_of IS NOT NULL AND state = 'pending'`), 250);
  assert.equal(count(`topic = 'bulk.else' AND state = 'dead'`), 10);
  const log = gw.log();
  assert.equal((log.match(/msg=console_action action=retry id=\d+ bulk=true role=admin token_fp=/g) || []).length, 250);
  assert.equal((log.match(/msg=console_bulk action=retry mode=filter topic=bulk\.all state=dead /g) || []).length, 3);
});

test('a run can be stopped between batches, and the rest done later', async () => {
  psql(db, `INSERT INTO job (topic, state) SELECT 'bulk.stop', 'canceled' FROM generate_series(1, 1000)`);
  await listed('bulk.stop', 'canceled', 50);
  await page.select('#bulk-action', 'delete');
  await page.click('#bulk-all');
  await page.waitForSelector('#bulk-question', { visible: true });
  assert.match(await textOf('#bulk-question'), /1000 jobs match now/);
  await page.click('#bulk-go');
  // Clicked in the page the moment it shows (a mutation observer): a click from here
  // could come after a fast run had finished and hidden the button.
  await page.waitForFunction(() => {
    const b = document.querySelector('#bulk-stop');
    if (!b || b.offsetParent === null) return false;
    b.click();
    return true;
  }, { polling: 'mutation' });
  const said = await ended();
  assert.match(said, /Stopped\.$/);
  const handled = Number(/: (\d+) of 1000 handled/.exec(said)[1]);
  assert.ok(handled >= 100 && handled < 1000 && handled % 100 === 0, said);
  assert.equal(count(`topic = 'bulk.stop'`), 1000 - handled);
  // Again: the count is what is left, and the run finishes it.
  await page.click('#bulk-all');
  await page.waitForFunction((n) => new RegExp(n + ' jobs match now').test(document.querySelector('#bulk-question')?.textContent || ''), {}, 1000 - handled);
  await page.click('#bulk-go');
  assert.match(await ended(), /Finished\.$/);
  assert.equal(count(`topic = 'bulk.stop'`), 0);
});
