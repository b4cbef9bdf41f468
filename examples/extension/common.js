// Settings and the API client shared by the popup and the options page.
// ragmem.js is the TypeScript client's build (clients/typescript), copied
// here so the extension loads without a build step.

import { Client, APIConnectionError } from './ragmem.js';

export const DEFAULTS = { server: 'http://127.0.0.1:7437', token: '', namespace: '' };

export async function loadSettings() {
  const s = await chrome.storage.local.get(DEFAULTS);
  return { server: (s.server || DEFAULTS.server).replace(/\/+$/, ''), token: s.token || '', namespace: s.namespace || '' };
}

export async function saveSettings(s) {
  await chrome.storage.local.set({ server: s.server.replace(/\/+$/, ''), token: s.token.trim(), namespace: s.namespace.trim() });
}

// clientFor is the client of the configured server: bearer token,
// namespace header, and the server's JSON errors as RagmemError.
export function clientFor(settings) {
  return new Client({ url: settings.server, token: settings.token, namespace: settings.namespace || undefined, timeoutMs: 30000 });
}

// errorText says what went wrong, in words for the user.
export function errorText(e, settings) {
  if (e instanceof APIConnectionError) {
    return `Cannot reach ${settings.server}. Is "ragmem serve --allow-origin ${location.origin}" running?`;
  }
  return e.message;
}

export function el(tag, props, ...children) {
  const n = document.createElement(tag);
  Object.assign(n, props || {});
  for (const c of children) if (c !== null && c !== undefined) n.append(c);
  return n;
}
