// docket operator console. Plain DOM, no framework, no build step.
// The API key lives in sessionStorage and is only ever sent as
// "Authorization: Bearer"; it never appears in a URL.
'use strict';

const KEY = 'docket.apiKey';
const RECENT_JOBS = 'docket.recentJobs';
let apiKey = sessionStorage.getItem(KEY) || '';
let pageAbort = null; // ends the current page's streams and timers

// ---- DOM helpers: text only, never innerHTML ----

function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const view = () => document.getElementById('view');

// fill replaces an element's children, skipping empty ones.
function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter(c => c !== null && c !== undefined && c !== false));
}

function announce(msg) {
  const a = document.getElementById('announce');
  a.textContent = '';
  setTimeout(() => { a.textContent = msg; }, 50);
}

function when(t) {
  if (!t) return '—';
  const d = new Date(t);
  return h('time', { datetime: t, title: t }, d.toLocaleString());
}

const moneyFormat = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 4 });
function money(n) { return typeof n === 'number' ? moneyFormat.format(n) : '—'; }

function badge(status, label) {
  return h('span', { class: 'badge s-' + status, 'data-status': status }, label || status);
}

function table(headers, rows, caption) {
  return h('div', { class: 'table-wrap' },
    h('table', {},
      caption ? h('caption', { class: 'visually-hidden' }, caption) : null,
      h('thead', {}, h('tr', {}, headers.map(x => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, rows)));
}

function facts(pairs) {
  return h('dl', { class: 'facts' }, pairs.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// ---- API ----

class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || ('HTTP ' + status));
    this.status = status;
    this.code = e.code || '';
    this.requestId = e.request_id || '';
  }
}

async function api(method, path, body, signal) {
  const headers = { Authorization: 'Bearer ' + apiKey, Accept: 'application/json' };
  const init = { method, headers, signal, cache: 'no-store' };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) { headers['Content-Type'] = 'application/json'; init.body = JSON.stringify(body); }
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch (_) { /* empty body */ }
  if (res.status === 401) { signOut('Your API key was refused. Sign in again.'); throw new ApiError(401, data); }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

function errorText(err) {
  if (err instanceof ApiError) return err.message + ' (' + (err.code || err.status) + (err.requestId ? ', request ' + err.requestId : '') + ')';
  return String(err && err.message || err);
}

// stream reads a Server-Sent Events stream with fetch (EventSource cannot
// send the Authorization header) and calls onState(event, data) for each
// event. It reconnects with Last-Event-ID until signal aborts.
async function stream(path, signal, onState, onLive) {
  let lastId = '';
  let backoff = 500;
  while (!signal.aborted) {
    try {
      const headers = { Authorization: 'Bearer ' + apiKey, Accept: 'text/event-stream' };
      if (lastId) headers['Last-Event-ID'] = lastId;
      const res = await fetch(path, { headers, signal, cache: 'no-store' });
      if (!res.ok || !res.body) throw new ApiError(res.status, await res.json().catch(() => null));
      onLive(true);
      backoff = 500;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          let event = 'message', data = '', id = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) data += line.slice(5).trim();
            else if (line.startsWith('id:')) id = line.slice(3).trim();
          }
          if (id) lastId = id;
          if (data) onState(event, JSON.parse(data));
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && err.status === 404) { onLive(false, 'gone'); return; }
    }
    onLive(false);
    await new Promise(r => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 10000);
  }
}

function liveIndicator() {
  const el = h('span', { class: 'live', role: 'status' }, 'connecting…');
  el.set = (on, why) => { el.textContent = on ? '● live' : (why === 'gone' ? 'stream ended' : '○ reconnecting…'); };
  return el;
}

// ---- sign-in ----

function signOut(message) {
  apiKey = '';
  sessionStorage.removeItem(KEY);
  if (pageAbort) pageAbort.abort();
  showSignIn(message || '');
}

function showSignIn(message) {
  document.getElementById('sign-in').hidden = false;
  view().hidden = true;
  for (const id of ['nav', 'open-form', 'sign-out']) document.getElementById(id).hidden = true;
  document.getElementById('sign-in-error').textContent = message;
  document.getElementById('api-key').focus();
}

async function signIn(ev) {
  ev.preventDefault();
  const input = document.getElementById('api-key');
  apiKey = input.value.trim();
  input.value = '';
  try {
    await api('GET', '/v1/batches?limit=1');
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 401)) showSignIn(errorText(err));
    return;
  }
  sessionStorage.setItem(KEY, apiKey);
  if (!location.hash || location.hash === '#') location.hash = '#/batches';
  route();
}

// ---- pages ----

function page(title, ...children) {
  const h1 = h('h1', { tabindex: '-1' }, title);
  fill(view(), h1, children);
  document.title = title + ' · docket console';
  h1.focus();
  return h1;
}

function errorBox(err) { return h('p', { class: 'error', role: 'alert' }, errorText(err)); }

async function batchesPage(signal) {
  const list = h('div', {}, h('p', {}, 'Loading…'));
  const upload = uploadForm(null);
  page('Batches', h('h2', {}, 'Upload a document'), upload, h('h2', {}, 'All batches'), list);
  let cursor = '';
  const rows = [];
  async function more() {
    const data = await api('GET', '/v1/batches?limit=100' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''), undefined, signal);
    for (const b of data.batches) {
      rows.push(h('tr', {},
        h('td', {}, h('a', { href: '#/batch/' + encodeURIComponent(b.name) }, b.name)),
        h('td', {}, badge(b.status)),
        h('td', { class: 'num' }, b.total),
        h('td', {}, ['queued', 'processing', 'succeeded', 'failed', 'canceled'].map(s => s + ' ' + b.counts[s]).join(', ')),
        h('td', {}, when(b.created_at)), h('td', {}, when(b.started_at)), h('td', {}, when(b.completed_at))));
    }
    cursor = data.next_cursor || '';
    fill(list, rows.length ? table(['Batch', 'Status', 'Documents', 'Counts', 'Created', 'Started', 'Completed'], rows, 'Batches') : h('p', { class: 'notice' }, 'No batches yet.'),
      cursor ? h('button', { type: 'button', class: 'secondary', onclick: () => more().catch(e => list.append(errorBox(e))) }, 'Load more') : null);
  }
  await more();
}

function uploadForm(batch) {
  const status = h('p', { role: 'status' });
  const nameField = batch ? null : h('label', {}, 'Batch name', h('input', { id: 'upload-batch', required: true, autocomplete: 'off', pattern: '[A-Za-z0-9._\\-]{1,128}' }));
  const form = h('form', { class: 'row', id: 'upload-form' },
    nameField,
    h('label', {}, 'File', h('input', { id: 'upload-file', type: 'file', required: true })),
    h('label', {}, 'Reference (optional)', h('input', { id: 'upload-reference', autocomplete: 'off' })),
    h('button', { type: 'submit' }, 'Upload'), status);
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    const name = batch || form.querySelector('#upload-batch').value.trim();
    const fd = new FormData();
    fd.append('file', form.querySelector('#upload-file').files[0]);
    const ref = form.querySelector('#upload-reference').value.trim();
    if (ref) fd.append('reference', ref);
    status.textContent = 'Uploading…';
    try {
      const doc = await api('POST', '/v1/batches/' + encodeURIComponent(name) + '/documents', fd);
      status.textContent = 'Uploaded ' + doc.file_name + ' as ' + doc.id + '.';
      announce(status.textContent);
      if (!batch) location.hash = '#/batch/' + encodeURIComponent(name);
      else form.dispatchEvent(new CustomEvent('uploaded'));
    } catch (err) { status.textContent = errorText(err); }
  });
  return form;
}

async function batchPage(signal, name) {
  const enc = encodeURIComponent(name);
  const live = liveIndicator();
  const summary = h('div', { class: 'panel', id: 'batch-summary' }, 'Loading…');
  const docs = h('div', { id: 'batch-documents' });
  const hook = h('div', { id: 'batch-webhook' });
  const timeline = h('div', { id: 'batch-timeline' });
  const msg = h('p', { role: 'status' });
  const process = h('button', { type: 'button', id: 'process' }, 'Process');
  const retry = h('button', { type: 'button', class: 'secondary' }, 'Retry failed');
  const upload = uploadForm(name);
  page('Batch ' + name, live, summary,
    h('div', { class: 'row' }, process, ' ', retry, msg),
    h('h2', {}, 'Upload to this batch'), upload,
    h('h2', {}, 'Documents'), docs,
    h('h2', {}, 'Webhook'), hook,
    h('h2', {}, 'Timeline'), timeline);
  const act = async (path, label) => {
    try { const r = await api('POST', path); msg.textContent = label + ': ' + r.queued + ' queued.'; announce(msg.textContent); }
    catch (err) { msg.textContent = errorText(err); }
  };
  process.addEventListener('click', () => act('/v1/batches/' + enc + '/process', 'Processing'));
  retry.addEventListener('click', () => act('/v1/batches/' + enc + '/process?retry_failed=true', 'Retrying failed'));

  // A busy batch changes many times a second: reload its lists at most
  // once a second, so the console stays well inside the rate limits.
  let pending = null, lastRefresh = 0;
  const refreshDocs = () => {
    if (pending) return;
    pending = setTimeout(() => {
      pending = null;
      lastRefresh = Date.now();
      loadDocuments(signal, enc, docs).catch(e => fill(docs, errorBox(e)));
      loadWebhook(signal, enc, hook, true).catch(() => {});
    }, Math.max(100, lastRefresh + 1000 - Date.now()));
  };
  upload.addEventListener('uploaded', refreshDocs);
  let lastStatus = '', lastDelivery = null;
  const showBatch = b => {
    // Stream states carry no last_delivery (only GET does): keep the last seen.
    if (b.last_delivery) lastDelivery = b.last_delivery; else b.last_delivery = lastDelivery;
    fill(summary,
      h('p', {}, 'Status ', badge(b.status), b.all_done ? ' · all done' : ''),
      facts([
        ['Documents', String(b.total)],
        ['Counts', ['queued', 'processing', 'succeeded', 'failed', 'canceled'].map(s => s + ' ' + b.counts[s]).join(', ')],
        ['Created', when(b.created_at)], ['Started', when(b.started_at)], ['Completed', when(b.completed_at)],
        ['Last webhook delivery', b.last_delivery ? [badge(b.last_delivery.state), ' ', b.last_delivery.type] : '—'],
      ]));
    if (b.status !== lastStatus) { if (lastStatus) announce('Batch ' + b.name + ' is ' + b.status); lastStatus = b.status; }
  };
  try { showBatch(await api('GET', '/v1/batches/' + enc, undefined, signal)); }
  catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
    fill(summary, h('p', { class: 'notice' }, 'This batch has no documents yet. Upload one to create it.'));
  }
  stream('/v1/batches/' + enc + '/events', signal, (event, data) => {
    if (event === 'batch') { showBatch(data); refreshDocs(); }
  }, (on, why) => live.set(on, why));
  await Promise.all([
    loadDocuments(signal, enc, docs),
    loadWebhook(signal, enc, hook),
    loadTimeline(signal, '/v1/batches/' + enc + '/history', timeline),
  ]);
}

async function loadDocuments(signal, enc, box) {
  const data = await api('GET', '/v1/batches/' + enc + '/results?limit=1000', undefined, signal);
  const rows = data.documents.map(d => h('tr', { 'data-document': d.id },
    h('td', {}, h('a', { href: '#/document/' + encodeURIComponent(d.id) }, d.file_name)),
    h('td', {}, badge(d.status)),
    h('td', {}, d.reference || '—'),
    h('td', { class: 'num' }, d.line_items.length),
    h('td', {}, d.processing_error ? d.processing_error.code : '—'),
    h('td', {}, when(d.created_at)), h('td', {}, when(d.started_at)), h('td', {}, when(d.completed_at))));
  fill(box, rows.length ? table(['Document', 'Status', 'Reference', 'Line items', 'Error', 'Created', 'Started', 'Completed'], rows, 'Documents of the batch')
    : h('p', { class: 'notice' }, 'No documents.'),
  data.next_cursor ? h('p', { class: 'notice' }, 'Showing the first 1000 documents.') : null);
}

async function loadWebhook(signal, enc, box, deliveriesOnly) {
  const existing = box.querySelector('#batch-deliveries');
  if (deliveriesOnly && existing && existing.dataset.loaded) {
    await loadDeliveries(signal, '/v1/batches/' + enc + '/webhook/deliveries', existing);
    return;
  }
  let hook = null;
  try { hook = await api('GET', '/v1/batches/' + enc + '/webhook', undefined, signal); }
  catch (err) { if (!(err instanceof ApiError && err.status === 404)) throw err; }
  const status = h('p', { role: 'status' });
  const url = h('input', { id: 'webhook-url', type: 'url', required: true, autocomplete: 'off', value: hook ? hook.url : '' });
  const form = h('form', { class: 'row' }, h('label', {}, 'Webhook URL', url), h('button', { type: 'submit' }, hook ? 'Replace' : 'Register'), status);
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    try {
      const r = await api('PUT', '/v1/batches/' + enc + '/webhook', { url: url.value });
      fill(status, 'Registered. Signing secret (shown once): ', h('code', {}, r.secret));
      deliveries.dataset.loaded = '1';
      await loadDeliveries(signal, '/v1/batches/' + enc + '/webhook/deliveries', deliveries);
    } catch (err) { status.textContent = errorText(err); }
  });
  const deliveries = h('div', { id: 'batch-deliveries' });
  if (deliveriesOnly && existing) return; // no webhook yet: keep the form as typed
  fill(box, form, deliveries);
  if (hook) {
    deliveries.dataset.loaded = '1';
    await loadDeliveries(signal, '/v1/batches/' + enc + '/webhook/deliveries', deliveries);
  }
}

async function loadDeliveries(signal, path, box) {
  const data = await api('GET', path, undefined, signal);
  const rows = data.deliveries.map(n => {
    const out = h('span', { role: 'status' });
    const btn = h('button', { type: 'button', class: 'secondary', 'data-redeliver': n.notification_id, 'aria-label': 'Redeliver ' + n.type + ' ' + n.notification_id }, 'Redeliver');
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        const r = await api('POST', path + '/' + encodeURIComponent(n.notification_id) + '/retry');
        out.textContent = ' redelivery ' + r.state;
        announce('Redelivery of ' + n.notification_id + ' requested');
        setTimeout(() => loadDeliveries(signal, path, box).catch(() => {}), 1000);
      } catch (err) { out.textContent = ' ' + errorText(err); btn.disabled = false; }
    });
    return h('tr', { 'data-notification': n.notification_id },
      h('td', {}, n.type), h('td', {}, badge(n.state)), h('td', { class: 'num' }, n.attempts),
      h('td', {}, n.last_status ? String(n.last_status) : '—', n.last_outcome ? ' ' + n.last_outcome : '', n.last_error ? h('div', { class: 'error' }, n.last_error) : null),
      h('td', {}, when(n.created_at)), h('td', {}, when(n.last_attempt_at)), h('td', {}, when(n.next_attempt_at)),
      h('td', {}, btn, out));
  });
  fill(box, rows.length ? table(['Event', 'State', 'Attempts', 'Last answer', 'Created', 'Last attempt', 'Next attempt', ''], rows, 'Deliveries')
    : h('p', { class: 'notice' }, 'No deliveries yet.'));
}

// loadTimeline shows a history endpoint's events. Older servers have no
// history endpoints: a 404 there says so instead of failing the page.
async function loadTimeline(signal, path, box) {
  fill(box, h('p', {}, 'Loading…'));
  const items = [];
  let cursor = null;
  try {
    do {
      const data = await api('GET', path + (cursor ? '?cursor=' + encodeURIComponent(cursor) : ''), undefined, signal);
      for (const e of data.events) {
        items.push(h('li', { 'data-event': e.type },
          h('strong', {}, e.type), ' ', h('span', { class: 'when' }, when(e.occurred_at), ' · ', e.actor || 'unknown actor', ' · partition ', e.partition, ', offset ', e.offset),
          h('details', {}, h('summary', {}, 'Details'), facts([['Event id', e.event_id], ['Correlation id', e.correlation_id || '—']]),
            h('pre', {}, JSON.stringify(e.payload, null, 2)))));
      }
      cursor = data.next_cursor;
    } while (cursor && items.length < 2000 && !signal.aborted);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      fill(box, h('p', { class: 'notice', id: 'history-unavailable' }, 'History unavailable.'));
      return;
    }
    fill(box, errorBox(err));
    return;
  }
  fill(box, items.length ? h('ol', { class: 'timeline', id: 'timeline', 'aria-label': 'Event timeline' }, items) : h('p', { class: 'notice' }, 'No events.'));
}

async function documentPage(signal, id) {
  const timeline = h('div', { id: 'document-timeline' });
  const d = await api('GET', '/v1/documents/' + encodeURIComponent(id), undefined, signal);
  const err = d.processing_error;
  page('Document ' + d.file_name,
    h('div', { class: 'panel' },
      h('p', {}, 'Status ', badge(d.status)),
      facts([
        ['Id', h('code', {}, d.id)],
        ['Batch', d.batch_name ? h('a', { href: '#/batch/' + encodeURIComponent(d.batch_name) }, d.batch_name) : '—'],
        ['Reference', d.reference || '—'], ['Type', d.content_type], ['Size', d.size + ' bytes'],
        ['Pages', d.num_pages === null ? '—' : String(d.num_pages)], ['Currency', d.currency || '—'],
        ['Created', when(d.created_at)], ['Started', when(d.started_at)], ['Completed', when(d.completed_at)],
      ])),
    err ? h('div', { class: 'panel', role: 'alert', id: 'processing-error' }, h('h2', {}, 'Processing error'), facts([['Code', err.code], ['Message', err.message]])) : null,
    h('h2', {}, 'Line items'),
    d.line_items.length ? table(['Description', 'Quantity', 'Unit price', 'Amount'],
      d.line_items.map(li => h('tr', {}, h('td', {}, li.description), h('td', { class: 'num' }, li.quantity), h('td', { class: 'num' }, money(li.unit_price)), h('td', { class: 'num' }, money(li.amount)))), 'Line items')
      : h('p', { class: 'notice' }, 'No line items.'),
    h('h2', {}, 'Timeline'), timeline);
  await loadTimeline(signal, '/v1/documents/' + encodeURIComponent(id) + '/history', timeline);
}

function rememberJob(handle, status) {
  const list = JSON.parse(sessionStorage.getItem(RECENT_JOBS) || '[]').filter(j => j.id !== handle);
  list.unshift({ id: handle, status, at: new Date().toISOString() });
  sessionStorage.setItem(RECENT_JOBS, JSON.stringify(list.slice(0, 50)));
}

async function jobPage(signal, handle) {
  const enc = encodeURIComponent(handle);
  const live = liveIndicator();
  const box = h('div', { id: 'job' }, 'Loading…');
  const timeline = h('div', { id: 'job-timeline' });
  const msg = h('p', { role: 'status' });
  const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel job');
  cancel.addEventListener('click', async () => {
    try { const j = await api('POST', '/v1/jobs/' + enc + '/cancel'); msg.textContent = 'Cancel requested; job is ' + j.status + '.'; }
    catch (err) { msg.textContent = errorText(err); }
  });
  page('Job', live, box, h('div', {}, cancel, msg), h('h2', {}, 'Timeline'), timeline);
  const show = j => {
    rememberJob(handle, j.status);
    const p = j.progress;
    const rows = (j.result && j.result.documents || []).map(r => h('tr', {},
      h('td', {}, h('a', { href: '#/document/' + encodeURIComponent(r.documentId) }, r.fileName || r.documentId)),
      h('td', {}, badge(r.status)), h('td', {}, r.error ? r.error.code + ': ' + r.error.message : '—')));
    fill(box,
      h('div', { class: 'panel' + (j.stalled ? ' stalled' : '') },
        h('p', {}, 'Status ', badge(j.status), j.stalled ? [' ', h('strong', { class: 'badge stalled-badge', id: 'stalled' }, 'stalled: no progress for too long')] : ''),
        p ? h('p', {}, h('label', { for: 'job-progress' }, 'Progress '), h('progress', { id: 'job-progress', max: p.total || 1, value: p.done }), ' ' + p.done + ' of ' + p.total + ' done, ' + p.failed + ' failed') : null,
        facts([
          ['Type', j.type], ['Job id', h('code', {}, j.jobId)],
          j.documentId ? ['Document', h('a', { href: '#/document/' + encodeURIComponent(j.documentId) }, j.fileName || j.documentId)] : ['Documents', String(rows.length)],
          ['Created', when(j.createdAt)], ['Started', when(j.startedAt)], ['Completed', when(j.completedAt)],
          ['Last progress', when(j.lastProgressAt)], ['Expires', when(j.expiresAt)],
          ['Duration', j.duration === undefined ? '—' : j.duration.toFixed(3) + ' s'],
          ['Last webhook delivery', j.lastDelivery ? [badge(j.lastDelivery.state), ' ', j.lastDelivery.type] : '—'],
        ]),
        j.error ? h('p', { class: 'error' }, j.error.code + ': ' + j.error.message) : null),
      rows.length ? table(['Document', 'Status', 'Error'], rows, 'Documents of the job') : null);
  };
  show(await api('GET', '/v1/jobs/' + enc + '?expand=documents', undefined, signal));
  // "stalled" turns true with time, not with an event: read the job again
  // now and then, beside the stream.
  const t = setInterval(() => api('GET', '/v1/jobs/' + enc + '?expand=documents', undefined, signal).then(show).catch(() => {}), 15000);
  signal.addEventListener('abort', () => clearInterval(t));
  stream('/v1/jobs/' + enc + '/events?expand=documents', signal, (event, data) => { if (event === 'job') show(data); }, (on, why) => live.set(on, why));
  await loadTimeline(signal, '/v1/jobs/' + enc + '/history', timeline);
}

async function jobsPage(signal) {
  const list = JSON.parse(sessionStorage.getItem(RECENT_JOBS) || '[]');
  const body = h('div', {});
  page('Jobs', h('p', {}, 'docket has no listing of jobs: open one by its jobId (from the API response or a webhook) with the field at the top. Jobs opened in this tab are listed here with their current status.'), body);
  if (!list.length) { body.append(h('p', { class: 'notice' }, 'No jobs opened yet.')); return; }
  const rows = await Promise.all(list.map(async j => {
    let cur = null, err = null;
    try { cur = await api('GET', '/v1/jobs/' + encodeURIComponent(j.id), undefined, signal); } catch (e) { err = e; }
    return h('tr', { class: cur && cur.stalled ? 'stalled' : null },
      h('td', {}, h('a', { href: '#/job/' + encodeURIComponent(j.id) }, j.id.slice(0, 24) + '…')),
      h('td', {}, cur ? [cur.type] : '—'),
      h('td', {}, cur ? [badge(cur.status), cur.stalled ? [' ', h('strong', { class: 'stalled-badge' }, 'stalled')] : ''] : errorText(err)),
      h('td', {}, cur && cur.progress ? cur.progress.done + '/' + cur.progress.total : '—'),
      h('td', {}, cur ? when(cur.lastProgressAt) : '—'));
  }));
  body.append(table(['Job', 'Type', 'Status', 'Progress', 'Last progress'], rows, 'Recently opened jobs'));
}

async function webhooksPage(signal) {
  const box = h('div', {});
  const status = h('p', { role: 'status' });
  const url = h('input', { id: 'endpoint-url', type: 'url', required: true, autocomplete: 'off' });
  const kinds = ['document.processed', 'document.processing_failed', 'extraction.completed', 'extraction.failed'];
  const checks = kinds.map(k => h('label', {}, h('input', { type: 'checkbox', value: k, checked: true }), ' ' + k));
  const form = h('form', { class: 'row' }, h('label', {}, 'Endpoint URL', url), h('fieldset', {}, h('legend', {}, 'Events'), checks), h('button', { type: 'submit' }, 'Add endpoint'), status);
  page('Webhook endpoints', form, box);
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    try {
      const events = checks.map(c => c.querySelector('input')).filter(i => i.checked).map(i => i.value);
      const r = await api('POST', '/v1/webhook-endpoints', { url: url.value, events });
      fill(status, 'Created ' + r.id + '. Signing secret (shown once): ', h('code', {}, r.secret));
      await list();
    } catch (err) { status.textContent = errorText(err); }
  });
  async function list() {
    const data = await api('GET', '/v1/webhook-endpoints', undefined, signal);
    const rows = data.endpoints.map(e => h('tr', {},
      h('td', {}, h('a', { href: '#/endpoint/' + encodeURIComponent(e.id) }, e.url)),
      h('td', {}, e.events.join(', ')), h('td', {}, e.disabled ? badge('gone', 'disabled') : badge('ok', 'active')), h('td', {}, when(e.createdAt))));
    fill(box, h('h2', {}, 'Endpoints'), rows.length ? table(['URL', 'Events', 'State', 'Created'], rows, 'Webhook endpoints') : h('p', { class: 'notice' }, 'No endpoints.'),
      h('p', {}, 'Batch webhooks are on each batch\'s page.'));
  }
  await list();
}

async function endpointPage(signal, id) {
  const e = await api('GET', '/v1/webhook-endpoints/' + encodeURIComponent(id), undefined, signal);
  const deliveries = h('div', {});
  page('Endpoint ' + e.url, facts([['Id', h('code', {}, e.id)], ['Events', e.events.join(', ')], ['State', e.disabled ? 'disabled (the receiver answered 410)' : 'active'], ['Created', when(e.createdAt)]]),
    h('h2', {}, 'Deliveries'), deliveries);
  await loadDeliveries(signal, '/v1/webhook-endpoints/' + encodeURIComponent(id) + '/deliveries', deliveries);
}

async function healthPage(signal) {
  const box = h('div', { id: 'health' }, 'Loading…');
  page('Health', h('p', {}, 'This node\'s readiness, refreshed every 5 seconds. Lag is how many events of each partition of the log the views have not applied yet.'), box);
  const load = async () => {
    const res = await fetch('/readyz', { signal, cache: 'no-store' });
    const r = await res.json();
    const parts = Object.keys(r.applied).concat(Object.keys(r.end || {})).filter((p, i, a) => a.indexOf(p) === i).sort((a, b) => a - b);
    const lag = r.lag || {};
    fill(box,
      h('div', { class: 'panel' }, h('p', {}, 'Readiness ', badge(r.status)),
        facts([['Broker', r.broker ? badge(r.broker) : '—'], ['Reasons', (r.reasons || []).join('; ') || '—'], ['Lag limit', r.max_lag === undefined ? '—' : String(r.max_lag)]])),
      h('h2', {}, 'Projection lag per partition'),
      table(['Partition', 'Applied', 'Log end', 'Lag'], parts.map(p => h('tr', { class: lag[p] > 0 ? 'lagging' : null },
        h('td', {}, p), h('td', { class: 'num' }, r.applied[p] ?? 0), h('td', { class: 'num' }, r.end ? r.end[p] ?? 0 : '—'), h('td', { class: 'num' }, r.lag ? lag[p] ?? 0 : '—'))), 'Projection lag'),
      h('p', {}, 'Metrics for Prometheus are at ', h('a', { href: '/metrics' }, '/metrics'), '.'));
  };
  const tick = async () => { try { await load(); } catch (err) { if (!signal.aborted) fill(box, errorBox(err)); } };
  await tick();
  const t = setInterval(tick, 5000);
  signal.addEventListener('abort', () => clearInterval(t));
}

// ---- routing ----

const routes = [
  [/^#\/batches$/, batchesPage],
  [/^#\/batch\/(.+)$/, batchPage],
  [/^#\/document\/(.+)$/, documentPage],
  [/^#\/job\/(.+)$/, jobPage],
  [/^#\/jobs$/, jobsPage],
  [/^#\/webhooks$/, webhooksPage],
  [/^#\/endpoint\/(.+)$/, endpointPage],
  [/^#\/health$/, healthPage],
];

async function route() {
  if (!apiKey) { showSignIn(''); return; }
  document.getElementById('sign-in').hidden = true;
  view().hidden = false;
  for (const id of ['nav', 'open-form', 'sign-out']) document.getElementById(id).hidden = false;
  if (pageAbort) pageAbort.abort();
  pageAbort = new AbortController();
  const signal = pageAbort.signal;
  const hash = location.hash || '#/batches';
  for (const a of document.querySelectorAll('nav a')) {
    if (hash.startsWith(a.getAttribute('href'))) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  for (const [re, fn] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    try { await fn(signal, ...m.slice(1).map(decodeURIComponent)); }
    catch (err) { if (!signal.aborted) page('Something went wrong', errorBox(err)); }
    return;
  }
  location.hash = '#/batches';
}

function openById(ev) {
  ev.preventDefault();
  const input = document.getElementById('open-id');
  const id = input.value.trim();
  if (!id) return;
  input.value = '';
  location.hash = (id.startsWith('doc_') ? '#/document/' : '#/job/') + encodeURIComponent(id);
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('sign-in-form').addEventListener('submit', signIn);
  document.getElementById('open-form').addEventListener('submit', openById);
  document.getElementById('sign-out').addEventListener('click', () => signOut('Signed out.'));
  // The skip link must not touch the hash, which is the router's.
  document.querySelector('.skip').addEventListener('click', ev => { ev.preventDefault(); document.getElementById('main').focus(); });
  window.addEventListener('hashchange', route);
  route();
});
