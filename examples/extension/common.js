// Settings and API calls shared by the popup and the options page.
'use strict';

const DEFAULTS = { server: 'http://127.0.0.1:7437', token: '', namespace: '' };

async function loadSettings() {
  const s = await chrome.storage.local.get(DEFAULTS);
  return { server: (s.server || DEFAULTS.server).replace(/\/+$/, ''), token: s.token || '', namespace: s.namespace || '' };
}

async function saveSettings(s) {
  await chrome.storage.local.set({ server: s.server.replace(/\/+$/, ''), token: s.token.trim(), namespace: s.namespace.trim() });
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// api calls the ragmem server with the token. Errors carry the server's
// {error: {code, message}}.
async function api(settings, method, path, body) {
  const headers = { Authorization: 'Bearer ' + settings.token };
  if (settings.namespace) headers['X-Ragmem-Namespace'] = settings.namespace;
  const init = { method, headers };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(settings.server + path, init);
  } catch (e) {
    throw new ApiError(0, 'unreachable', `Cannot reach ${settings.server}. Is "ragmem serve --allow-origin ${location.origin}" running?`);
  }
  let data = null;
  try { data = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) {
    const e = (data && data.error) || {};
    throw new ApiError(res.status, e.code || 'http_' + res.status, e.message || res.statusText);
  }
  return data;
}

function el(tag, props, ...children) {
  const n = document.createElement(tag);
  Object.assign(n, props || {});
  for (const c of children) if (c !== null && c !== undefined) n.append(c);
  return n;
}
