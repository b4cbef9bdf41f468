// The popup: remember the active tab's page, and search the memory.

import { JobError } from './ragmem.js';
import { loadSettings, clientFor, errorText, el } from './common.js';

const $ = (id) => document.getElementById(id);
let settings;
let client;

function status(text, isError) {
  const s = $('remember-status');
  s.textContent = text;
  s.className = 'status' + (isError ? ' error' : '');
}

// pageOfActiveTab reads the URL, title and HTML of the active tab.
async function pageOfActiveTab() {
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  if (!tab || !/^https?:/.test(tab.url || '')) throw new Error('Only http and https pages can be remembered.');
  const [res] = await chrome.scripting.executeScript({
    target: { tabId: tab.id },
    func: () => ({ url: location.href, title: document.title, html: document.documentElement.outerHTML }),
  });
  return res.result;
}

const plural = (n) => `${n} chunk${n === 1 ? '' : 's'}`;

async function remember() {
  const btn = $('remember');
  btn.disabled = true;
  try {
    const page = await pageOfActiveTab();
    status('Sending…');
    const acc = await client.indexPageAsync({ url: page.url, html: page.html });
    if (acc.status === 'unchanged') {
      status(`Already remembered, unchanged (${plural(acc.chunks)}).`);
      return;
    }
    status('Indexing…');
    const job = await client.waitJob(acc.jobId, { timeoutMs: 30000 });
    status(job.unchanged ? 'Already remembered, unchanged.' : `Remembered: ${acc.title} (${plural(job.chunks)}).`);
  } catch (e) {
    if (e instanceof JobError && e.code === 'job_timeout') status('Still indexing in the background.');
    else if (e instanceof JobError) status('Indexing failed: ' + (e.job.error || e.job.state), true);
    else status(errorText(e, settings), true);
  } finally {
    btn.disabled = false;
  }
}

async function search(ev) {
  ev.preventDefault();
  const list = $('results');
  list.replaceChildren();
  try {
    const res = await client.search($('query').value, { topK: 8 });
    if (!res.results.length) list.append(el('li', { className: 'muted', textContent: 'Nothing found.' }));
    for (const r of res.results) {
      const link = /^https?:/.test(r.url)
        ? el('a', { href: r.url, target: '_blank', rel: 'noopener noreferrer', textContent: r.title || r.url })
        : el('span', { textContent: r.title || r.url });
      const snippet = r.content.replace(/\s+/g, ' ').slice(0, 180);
      list.append(el('li', { className: 'result' },
        link,
        el('div', { className: 'meta', textContent: `${r.score.toFixed(3)} · ${r.age}` }),
        el('div', { className: 'snippet', textContent: snippet })));
    }
  } catch (e) {
    list.append(el('li', { className: 'error', textContent: errorText(e, settings) }));
  }
}

async function init() {
  settings = await loadSettings();
  client = clientFor(settings);
  $('remember').addEventListener('click', remember);
  $('search-form').addEventListener('submit', search);
  $('options').addEventListener('click', (ev) => { ev.preventDefault(); chrome.runtime.openOptionsPage(); });
  if (!settings.token) status('Set the server token in Settings first.', true);
  document.body.dataset.ready = 'true';
}

init();
