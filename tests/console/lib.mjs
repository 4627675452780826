// SPDX-License-Identifier: MIT
// The browser tests' harness: a database on the test cluster (tests/pg.sh), a real brooq-gateway
// with fresh tokens, Debian's chromium driven by puppeteer-core, axe-core.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import puppeteer from 'puppeteer-core';

const here = path.dirname(fileURLToPath(import.meta.url));

function need(name) {
  const v = process.env[name];
  // A suite without its database or programs is a failed suite, never a skipped one.
  if (!v) throw new Error(`${name} is not set: run through ctest (tests/run.sh starts the cluster)`);
  return v;
}

export const pghost = need('BROOQ_TEST_PGHOST');
export const binDir = need('BROOQ_TEST_BIN_DIR');
export const outDir = process.env.BROOQ_TEST_OUT_DIR || path.join(os.tmpdir(), 'brooq-console-out');

export function psql(db, sql) {
  return execFileSync('psql', ['-h', pghost, '-U', 'postgres', '-d', db, '-v', 'ON_ERROR_STOP=1', '-Atqc', sql],
    { encoding: 'utf8' }).trim();
}

export function createDb() {
  const name = 'console_' + process.pid + '_' + randomBytes(3).toString('hex');
  psql('postgres', `CREATE DATABASE ${name} TEMPLATE brooq_template`);
  return name;
}

export function dropDb(name) {
  psql('postgres', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A gateway on db with fresh admin and worker tokens; resolves once the console answers.
export async function startGateway(db, extraEnv = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brooq-console-'));
  const admin = randomBytes(32).toString('base64');
  const worker = randomBytes(32).toString('base64');
  fs.writeFileSync(path.join(dir, 'admin-token'), admin + '\n', { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'worker-token'), worker + '\n', { mode: 0o600 });
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    ASAN_OPTIONS: process.env.ASAN_OPTIONS || '',
    LSAN_OPTIONS: process.env.LSAN_OPTIONS || '',
    UBSAN_OPTIONS: process.env.UBSAN_OPTIONS || '',
    BROOQ_DSN: `host=${pghost} dbname=${db} user=postgres`,
    BROOQ_LISTEN: `ipc://${dir}/gw.sock`,
    BROOQ_ADMIN_TOKEN_FILES: path.join(dir, 'admin-token'),
    BROOQ_WORKER_TOKEN_FILES: path.join(dir, 'worker-token'),
    BROOQ_HTTP_LISTEN: `127.0.0.1:${port}`,
    BROOQ_POLL_INTERVAL: '200ms',
    BROOQ_POOL_SIZE: '4',
    ...extraEnv,
  };
  const logPath = path.join(dir, 'gateway.log');
  const log = fs.openSync(logPath, 'w');
  const proc = spawn(path.join(binDir, 'brooq-gateway'), [], { env, stdio: ['ignore', log, log] });
  let exited = null;
  proc.on('exit', (code, sig) => { exited = { code, sig }; });
  const url = `http://127.0.0.1:${port}`;
  const gw = {
    dir, port, url, admin, worker, logPath, proc,
    log: () => fs.readFileSync(logPath, 'utf8'),
    async stop() {
      if (exited === null) {
        proc.kill('SIGTERM');
        for (let i = 0; i < 300 && exited === null; i++) await sleep(50);
      }
      fs.closeSync(log);
      const text = fs.readFileSync(logPath, 'utf8');
      fs.rmSync(dir, { recursive: true, force: true });
      return { exited, log: text };
    },
  };
  // Up to 30 s: a gateway under ASan on a busy machine takes a while to start.
  for (let i = 0; i < 600; i++) {
    if (exited !== null) throw new Error('gateway exited at start:\n' + gw.log());
    try {
      const r = await fetch(url + '/console/');
      if (r.status === 200) return gw;
    } catch (e) { /* not yet listening */ }
    await sleep(50);
  }
  throw new Error('gateway did not answer on ' + url + ':\n' + gw.log());
}

// The gateway's log must hold no sanitizer report (the sanitizer build runs this too).
export function assertCleanLog(text) {
  if (/ERROR: (Leak|Address)Sanitizer|runtime error:/.test(text)) {
    throw new Error('sanitizer report in the gateway log:\n' + text);
  }
}

export async function launchBrowser() {
  const exe = fs.existsSync('/usr/lib/chromium/chromium') ? '/usr/lib/chromium/chromium' : '/usr/bin/chromium';
  return puppeteer.launch({
    executablePath: exe,
    headless: true,
    // As root (tests/run.sh runs as root) Chromium refuses its sandbox.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
}

const axeSource = fs.readFileSync(path.join(here, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

// axe-core's WCAG 2.x A/AA and best-practice rules on the page as it is. Evaluated
// through the DevTools protocol, which the page's CSP (no inline script) does not block.
export async function axe(page) {
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }));
  });
}

// Clicks the element selector finds, once its text matches text (a RegExp), found and
// clicked in one go inside the page. The overview redraws every 2 s and a job's page every
// 3 s: an element handle kept from a find to its click can be detached in between ("Node is
// detached from document"), and the busier the machine, the wider that gap.
export async function clickWhen(page, selector, text = /(?:)/, timeout = 30000) {
  await page.waitForFunction((sel, source, flags) => {
    const e = document.querySelector(sel);
    if (!e || !new RegExp(source, flags).test(e.textContent)) return false;
    e.click();
    return true;
  }, { timeout }, selector, text.source, text.flags);
}

export { sleep };
