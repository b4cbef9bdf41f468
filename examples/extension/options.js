// The options page: server URL, token and namespace, with a connection test.

import { loadSettings, saveSettings, clientFor, errorText } from './common.js';

const $ = (id) => document.getElementById(id);

async function save(ev) {
  ev.preventDefault();
  await saveSettings({ server: $('server').value, token: $('token').value, namespace: $('namespace').value });
  const settings = await loadSettings();
  const r = $('result');
  try {
    const st = await clientFor(settings).stats();
    r.className = 'status';
    r.textContent = `Connected: ${st.store.documentCount} pages, ${st.store.chunkCount} chunks in namespace "${st.namespace || 'default'}".`;
  } catch (e) {
    r.className = 'status error';
    r.textContent = errorText(e, settings);
  }
}

async function init() {
  const s = await loadSettings();
  $('server').value = s.server;
  $('token').value = s.token;
  $('namespace').value = s.namespace;
  $('command').textContent = `ragmem serve --allow-origin ${location.origin}`;
  $('form').addEventListener('submit', save);
  document.body.dataset.ready = 'true';
}

init();
