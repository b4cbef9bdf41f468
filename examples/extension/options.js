// The options page: server URL, token and namespace, with a connection test.
'use strict';

const $ = (id) => document.getElementById(id);

async function save(ev) {
  ev.preventDefault();
  const s = { server: $('server').value, token: $('token').value, namespace: $('namespace').value };
  await saveSettings(s);
  const r = $('result');
  try {
    const st = await api(await loadSettings(), 'GET', '/v1/stats');
    r.className = 'status';
    r.textContent = `Connected: ${st.store.documentCount} pages, ${st.store.chunkCount} chunks in namespace "${st.namespace || 'default'}".`;
  } catch (e) {
    r.className = 'status error';
    r.textContent = e.message;
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
