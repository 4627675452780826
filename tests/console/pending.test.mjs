// SPDX-License-Identifier: MIT
// The console's browser test of pause and resume (the job list, retry and delete are in
// browser.test.mjs): a topic paused from the overview stops being claimed, and resumed goes on.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { binDir, clickWhen, createDb, dropDb, launchBrowser, psql, sleep, startGateway } from './lib.mjs';

let db, gw, browser, page, worker;

before(async () => {
  db = createDb();
  gw = await startGateway(db);
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
  if (gw) await gw.stop();
  if (db) dropDb(db);
});

test('pause a topic from the overview and see claims stop; resume and see them go on', async () => {
  const dir = fs.mkdtempSync(path.join(gw.dir, 'w-'));
  fs.writeFileSync(path.join(dir, 'token'), gw.worker, { mode: 0o600 });
  worker = spawn(path.join(binDir, 'example-worker'), [], {
    env: { ...process.env, BROOQ_URL: `ipc://${gw.dir}/gw.sock`, BROOQ_TOKEN_FILE: path.join(dir, 'token') },
    stdio: 'ignore',
  });
  // Waits for a job to be done: up to 30 s, for a busy machine (it takes well under one).
  const waitDone = async (id) => {
    for (let i = 0; i < 300 && psql(db, `SELECT state FROM job WHERE id = ${id}`) !== 'done'; i++) await sleep(100);
    assert.equal(psql(db, `SELECT state FROM job WHERE id = ${id}`), 'done');
  };
  const first = psql(db, `INSERT INTO job (topic, payload) VALUES ('demo.hello', '{}') RETURNING id`);
  await waitDone(first);
  await page.goto(gw.url + '/console/#/overview');
  // The overview redraws every 2 s: its button is found and clicked in the page at once
  // (clickWhen), never through a handle the next redraw detaches.
  const button = '#topics tr[data-topic="demo.hello"] button';
  await clickWhen(page, button, /^Pause/);
  await page.waitForSelector('#topics tr[data-topic="demo.hello"] .badge.paused');
  const held = psql(db, `INSERT INTO job (topic, payload) VALUES ('demo.hello', '{}') RETURNING id`);
  await sleep(2500); // several poll intervals: no gateway claims it
  assert.equal(psql(db, `SELECT state || ' ' || attempts FROM job WHERE id = ${held}`), 'pending 0');
  await clickWhen(page, button, /^Resume/);
  await waitDone(held);
});
