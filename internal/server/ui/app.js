// ragmem web UI: plain JavaScript, no build step. Every piece of stored
// text is put on the page with textContent, never as HTML: pages in the
// memory are untrusted.
'use strict';

const $ = (id) => document.getElementById(id);
const OLD_TOKEN_KEY = 'ragmem.token'; // kept by earlier versions: removed on load
const NS_KEY = 'ragmem.namespace';

const state = { ns: '', sourcesOffset: 0, sourcesLimit: 50, sourcesTotal: 0 };

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// Requests are authenticated by the session cookie (HttpOnly: this script
// never sees it), which the server accepts only with the X-Ragmem-UI header.
async function api(method, path, body) {
  const headers = { 'X-Ragmem-UI': '1' };
  if (state.ns) headers['X-Ragmem-Namespace'] = state.ns;
  const init = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) {
    const e = (data && data.error) || {};
    if (res.status === 401) showToken(e.message || 'The token was refused.');
    throw new ApiError(res.status, e.code || 'http_' + res.status, e.message || res.statusText);
  }
  return data;
}

function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') n.className = v;
    else if (k === 'text') n.textContent = v;
    else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return n;
}

// lastStatus is the status line before an error replaced it.
let lastStatus = '';

function setStatus(text, isError) {
  const s = $('status');
  s.textContent = text;
  s.classList.toggle('error', !!isError);
  if (!isError) lastStatus = text;
}

// clearError puts back the status line an error replaced.
function clearError() {
  if ($('status').classList.contains('error')) setStatus(lastStatus, false);
}

function errorText(e) {
  return e instanceof ApiError ? `${e.message} (${e.code})` : String(e);
}

function fail(e) {
  setStatus(errorText(e), true);
}

// Only http(s) links are made clickable; anything else is shown as text.
function safeHref(url) {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch (_) {
    return null;
  }
}

function sourceLink(url, title) {
  const href = safeHref(url);
  const label = title || url;
  return href ? el('a', { href, target: '_blank', rel: 'noopener noreferrer', class: 'title' , text: label })
    : el('span', { class: 'title', text: label });
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function clip(s, n) {
  s = (s || '').replace(/\s+/g, ' ').trim();
  return s.length > n ? s.slice(0, n) + '…' : s;
}

function explain(x) {
  const parts = [];
  if (x.bm25Rank) parts.push(`BM25 #${x.bm25Rank} (${x.bm25Score.toFixed(3)})`);
  if (x.vectorRank) {
    const refined = x.feedbackSimilarity ? `; refined ${x.feedbackSimilarity.toFixed(3)}` : '';
    parts.push(`vector #${x.vectorRank} (${(x.vectorSimilarity || 0).toFixed(3)}${refined})`);
  }
  parts.push(x.method);
  return parts.join(' · ');
}

// ---- tabs -------------------------------------------------------------

function showTab(name) {
  for (const b of document.querySelectorAll('.tab')) b.classList.toggle('active', b.dataset.tab === name);
  for (const t of ['search', 'sources', 'preferences']) $('tab-' + t).hidden = t !== name;
  if (name === 'sources') loadSources().catch(fail);
  if (name === 'preferences') loadPrefs().catch(fail);
}

// ---- token ------------------------------------------------------------

function showToken(message) {
  $('token-panel').hidden = false;
  $('app').hidden = true;
  const err = $('token-error');
  err.hidden = !message;
  err.textContent = message || '';
}

function hideToken() {
  $('token-panel').hidden = true;
  $('app').hidden = false;
}

async function connect() {
  const st = await api('GET', '/v1/stats');
  hideToken();
  const s = st.store;
  setStatus(`${st.namespace || 'default'} · ${plural(s.documentCount, 'page')} · ${plural(s.chunkCount, 'chunk')}`);
}

// ---- search -----------------------------------------------------------

async function runSearch(ev) {
  if (ev) ev.preventDefault();
  const query = $('search-input').value.trim();
  if (!query) return;
  $('search-button').disabled = true;
  // A new search starts clean: an earlier error goes, and the results
  // shown are this search's or none (never an earlier query's).
  clearError();
  $('results').setAttribute('aria-busy', 'true');
  try {
    const body = { query, mode: $('search-mode').value, topK: 10, groupBySource: true };
    const filter = $('search-filter').value.trim();
    if (filter) body.filter = filter;
    const res = await api('POST', '/v1/search', body);
    renderResults(res);
  } catch (e) {
    $('results').replaceChildren();
    const summary = $('search-summary');
    summary.textContent = `Search for “${query}” failed: ${errorText(e)}`;
    summary.classList.add('error');
    fail(e);
  } finally {
    $('results').removeAttribute('aria-busy');
    $('search-button').disabled = false;
  }
}

// renderResults shows the results grouped by source (the server orders
// them source by source): one item per source, with its best score, and
// its passages in order under it.
function renderResults(res) {
  const list = $('results');
  list.replaceChildren();
  const groups = [];
  for (const r of res.results) {
    const last = groups[groups.length - 1];
    if (last && last.url === r.url) last.items.push(r);
    else groups.push({ url: r.url, items: [r] });
  }
  const summary = $('search-summary');
  summary.classList.remove('error');
  summary.textContent = (res.results.length
    ? `${res.results.length} result${res.results.length === 1 ? '' : 's'} from ${groups.length} source${groups.length === 1 ? '' : 's'} for “${res.query}” in ${res.tookMs.toFixed(1)} ms (${res.mode})`
    : `Nothing found for “${res.query}”.`) + (res.degraded ? ` — ${res.degraded}` : '');
  for (const g of groups) {
    const top = g.items[0];
    const also = [...new Set(g.items.flatMap((r) => r.alsoAt || []))];
    const passages = el('ol', { class: 'passages' });
    for (const r of g.items) {
      passages.append(el('li', { class: 'passage' },
        r.headingPath && r.headingPath.length ? el('div', { class: 'path', text: '§ ' + r.headingPath.join(' › ') }) : null,
        el('p', { class: 'snippet', text: clip(r.content, 400) }),
        el('div', { class: 'explain', text: explain(r.explanation) })));
    }
    list.append(el('li', { class: 'result', 'data-url': g.url },
      el('div', { class: 'result-head' },
        sourceLink(top.url, top.title),
        el('span', { class: 'score', title: 'best score (a hybrid score is relative to this result list; the raw BM25 and vector scores are under each passage)', text: top.score.toFixed(4) })),
      el('div', { class: 'meta' },
        el('span', { class: 'url', text: top.url }),
        g.items.length > 1 ? el('span', { class: 'count', text: `${g.items.length} passages` }) : null,
        el('time', { class: 'age', datetime: top.createdAt, title: new Date(top.createdAt).toLocaleString(), text: top.age })),
      also.length ? el('div', { class: 'also muted', text: 'also at ' + also.join(', ') }) : null,
      passages));
  }
}

// ---- sources ----------------------------------------------------------

async function loadSources() {
  const q = `/v1/sources?offset=${state.sourcesOffset}&limit=${state.sourcesLimit}`;
  const res = await api('GET', q);
  state.sourcesTotal = res.total;
  const body = $('sources-body');
  body.replaceChildren();
  for (const s of res.sources) body.append(sourceRow(s));
  const last = Math.min(res.offset + res.sources.length, res.total);
  $('sources-summary').textContent = res.total ? `${res.offset + 1}–${last} of ${res.total} sources` : 'No sources yet.';
  $('sources-prev').disabled = res.offset === 0;
  $('sources-next').disabled = last >= res.total;
}

function sourceRow(s) {
  const del = el('button', { type: 'button', class: 'danger delete', text: 'Delete' });
  del.addEventListener('click', async () => {
    if (!del.classList.contains('confirm')) {
      del.classList.add('confirm');
      del.textContent = 'Confirm delete';
      setTimeout(() => { del.classList.remove('confirm'); del.textContent = 'Delete'; }, 4000);
      return;
    }
    del.disabled = true;
    try {
      const r = await api('DELETE', '/v1/pages?url=' + encodeURIComponent(s.url));
      $('sources-notice').textContent = `Deleted ${s.url} (${plural(r.removed, 'chunk')}).`;
      connect().catch(fail);
      if (!$('source-view').hidden && $('source-view').dataset.url === s.url) $('source-view').hidden = true;
      await loadSources();
    } catch (e) {
      fail(e);
      del.disabled = false;
    }
  });
  const view = el('button', { type: 'button', class: 'view', text: 'View', onclick: () => viewSource(s.url).catch(fail) });
  return el('tr', { 'data-url': s.url },
    el('td', {}, sourceLink(s.url, s.title), el('div', { class: 'url', text: s.url })),
    el('td', { class: 'num', text: s.chunks }),
    el('td', {}, el('time', { datetime: s.createdAt, title: new Date(s.createdAt).toLocaleString(), text: s.age })),
    el('td', { class: 'actions' }, view, del));
}

async function viewSource(url) {
  const p = await api('GET', '/v1/pages?url=' + encodeURIComponent(url));
  const v = $('source-view');
  v.dataset.url = url;
  $('source-view-title').textContent = p.title || url;
  const list = $('source-view-chunks');
  list.replaceChildren();
  for (const c of p.chunks) {
    list.append(el('li', {},
      c.headingPath && c.headingPath.length ? el('div', { class: 'path', text: c.headingPath.join(' › ') }) : null,
      el('pre', { class: 'chunk', text: c.content }),
      el('div', { class: 'muted', text: `${plural(c.tokens, 'token')} · ${c.age}` })));
  }
  v.hidden = false;
}

// ---- preferences ------------------------------------------------------

async function loadPrefs() {
  const res = await api('GET', '/v1/preferences');
  const list = $('prefs-list');
  list.replaceChildren();
  if (!res.preferences.length) list.append(el('li', { class: 'muted', text: 'No preferences yet.' }));
  for (const p of res.preferences) list.append(prefItem(p));
}

function prefItem(p) {
  const li = el('li', { 'data-id': p.id });
  const text = el('span', { class: 'pref-content', text: p.content });
  const edit = el('button', { type: 'button', text: 'Edit' });
  const del = el('button', { type: 'button', class: 'danger', text: 'Delete' });
  del.addEventListener('click', async () => {
    try {
      await api('DELETE', '/v1/preferences?id=' + encodeURIComponent(p.id));
      await loadPrefs();
    } catch (e) { fail(e); }
  });
  edit.addEventListener('click', () => {
    const input = el('input', { value: p.content, maxlength: 2000, class: 'pref-edit' });
    const save = el('button', { type: 'button', text: 'Save' });
    const cancel = el('button', { type: 'button', text: 'Cancel', onclick: () => loadPrefs().catch(fail) });
    save.addEventListener('click', async () => {
      const content = input.value.trim();
      if (!content || content === p.content) { await loadPrefs(); return; }
      try {
        // Add the new wording first, so a failure never loses the old one.
        await api('POST', '/v1/preferences', { type: p.type, content });
        await api('DELETE', '/v1/preferences?id=' + encodeURIComponent(p.id));
        await loadPrefs();
      } catch (e) { fail(e); }
    });
    li.replaceChildren(el('span', { class: 'badge', text: p.type }), input, save, cancel);
    input.focus();
  });
  li.append(el('span', { class: 'badge', text: p.type }), text, edit, del);
  return li;
}

async function addPref(ev) {
  ev.preventDefault();
  try {
    await api('POST', '/v1/preferences', { type: $('pref-type').value, content: $('pref-content').value });
    $('pref-content').value = '';
    await loadPrefs();
  } catch (e) { fail(e); }
}

async function detect(ev) {
  ev.preventDefault();
  const out = $('detect-result');
  try {
    const res = await api('POST', '/v1/preferences/detect', { message: $('detect-input').value });
    out.replaceChildren();
    if (!res.detected) { out.textContent = 'No preference statement found.'; return; }
    const save = el('button', { type: 'button', text: 'Save it' });
    save.addEventListener('click', async () => {
      try {
        await api('POST', '/v1/preferences', { type: res.intent.type, content: res.intent.content });
        out.textContent = 'Saved.';
        await loadPrefs();
      } catch (e) { fail(e); }
    });
    out.append(el('span', { class: 'badge', text: res.intent.type }), ' ' + res.intent.content + ' ', save);
  } catch (e) { fail(e); }
}

// ---- start ------------------------------------------------------------

// signIn exchanges a pasted token for a session cookie.
async function signIn(token) {
  const res = await fetch('/ui/session', {
    method: 'POST', credentials: 'same-origin',
    headers: { 'X-Ragmem-UI': '1', 'Content-Type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  if (!res.ok) {
    let msg = 'The token was refused.';
    try { msg = (await res.json()).error.message || msg; } catch (_) { /* not JSON */ }
    showToken(msg);
    return;
  }
  await connect();
}

function init() {
  localStorage.removeItem(OLD_TOKEN_KEY);
  let notice = '';
  if (/(?:^#|&)token=/.test(location.hash)) {
    // An old link with the token in it: never used, gone from the address bar.
    history.replaceState(null, '', location.pathname);
    notice = 'Links with the token in them are not used any more: open the link ragmem serve prints, or paste the token.';
  }
  if (new URLSearchParams(location.search).get('login') === 'expired') {
    history.replaceState(null, '', '/');
    notice = 'That login link has expired or was used already: paste the token (ragmem token show), or restart ragmem serve for a new link.';
  }
  state.ns = localStorage.getItem(NS_KEY) || '';
  $('namespace').value = state.ns;

  for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => showTab(b.dataset.tab));
  $('search-form').addEventListener('submit', runSearch);
  $('sources-prev').addEventListener('click', () => { state.sourcesOffset = Math.max(0, state.sourcesOffset - state.sourcesLimit); loadSources().catch(fail); });
  $('sources-next').addEventListener('click', () => { state.sourcesOffset += state.sourcesLimit; loadSources().catch(fail); });
  $('sources-refresh').addEventListener('click', () => loadSources().catch(fail));
  $('source-view-close').addEventListener('click', () => { $('source-view').hidden = true; });
  $('pref-form').addEventListener('submit', addPref);
  $('detect-form').addEventListener('submit', detect);
  $('change-token').addEventListener('click', () => {
    fetch('/ui/session', { method: 'DELETE', credentials: 'same-origin', headers: { 'X-Ragmem-UI': '1' } })
      .finally(() => showToken(''));
  });
  $('namespace').addEventListener('change', () => {
    state.ns = $('namespace').value.trim();
    localStorage.setItem(NS_KEY, state.ns);
    state.sourcesOffset = 0;
    $('results').replaceChildren();
    $('search-summary').textContent = '';
    $('search-summary').classList.remove('error');
    connect().then(() => {
      if (!$('tab-sources').hidden) return loadSources();
      if (!$('tab-preferences').hidden) return loadPrefs();
    }).catch(fail);
  });
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const token = $('token-input').value.trim();
    $('token-input').value = '';
    signIn(token).catch(fail);
  });

  if (notice) showToken(notice);
  else connect().catch((e) => { if (!(e instanceof ApiError && e.status === 401)) fail(e); });
  document.body.dataset.ready = 'true';
}

init();
