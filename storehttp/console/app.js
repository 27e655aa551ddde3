// gostore console: a page over storehttp's JSON API and its event stream.
//
// Every URL is relative ("v1/..."), so the page works wherever the handler
// is mounted. Data is shown with textContent only, never as HTML. The
// live pane follows GET v1/events itself: on an error it closes the
// EventSource (no automatic retry by the browser), waits with backoff
// and reopens it with ?after= the last event it showed, so a server
// restart loses and repeats nothing. Log out, or a login as someone
// else, clears everything the page showed (forget), so nothing of one
// user's data stays in the page for the next.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  // The event types the feed sends (store.EventType's names).
  const eventTypes = ["set", "delete", "delete_group", "expired", "ttl"];
  // How many events the pane keeps; older ones are dropped from the page.
  const maxEvents = 1000;
  const pageSize = 50;

  const state = {
    group: null, // the group whose keys are listed
    groupsNext: "",
    keysNext: "",
    entry: null, // the loaded entry: {group, key, version}
    conflict: null, // the current entry shown after a 412
    authKnown: false, // the server asked for or accepted a login
    user: null, // who logged in through the form, once known
  };

  // ---- status and small helpers ----

  function setText(id, text) {
    $(id).textContent = text;
  }

  function status(text, isError) {
    const el = $("status");
    el.textContent = text;
    el.classList.toggle("error", !!isError);
  }

  function enc(name) {
    return encodeURIComponent(name);
  }

  function keyURL(group, key) {
    return "v1/groups/" + enc(group) + "/keys/" + enc(key);
  }

  // api calls the JSON API and answers {status, data, etag}. A 401 shows
  // the login form (except for the login itself).
  async function api(method, url, opt = {}) {
    const init = { method, headers: opt.headers || {}, credentials: "same-origin" };
    if (opt.body !== undefined) init.body = opt.body;
    const resp = await fetch(url, init);
    let data = null;
    const text = await resp.text();
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = { error: text };
      }
    }
    if (resp.status === 401 && !opt.noLogin) {
      state.authKnown = true;
      showLogin("Log in to continue.");
    }
    return { status: resp.status, data, etag: resp.headers.get("ETag") };
  }

  function errorText(r) {
    if (r.data && r.data.error) return r.data.error + " (" + r.status + ")";
    return "HTTP " + r.status;
  }

  // ---- login ----

  function showLogin(why) {
    $("app").hidden = true;
    $("login").hidden = false;
    $("logout").hidden = true;
    setText("login-error", why || "");
    $("login-password").focus();
  }

  function showApp() {
    $("login").hidden = true;
    $("app").hidden = false;
    $("logout").hidden = !state.authKnown;
  }

  $("login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const user = $("login-user").value;
    const password = $("login-password").value;
    let r;
    try {
      r = await api("POST", "v1/login", {
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ user, password }),
        noLogin: true,
      });
    } catch (err) {
      setText("login-error", "The server cannot be reached: " + err.message);
      return;
    }
    $("login-password").value = "";
    if (r.status === 200) {
      state.authKnown = true;
      // After a lost session (a restart) the same user goes on where the
      // page was; another user starts from nothing.
      if (state.user !== null && state.user !== r.data.user) forget();
      state.user = r.data.user;
      setText("who", "Logged in as " + r.data.user + (r.data.namespace ? " (namespace " + r.data.namespace + ")" : ""));
    } else if (r.status === 404 && r.data && r.data.code === "auth_not_configured") {
      setText("who", "This server has no users: no login needed.");
    } else {
      setText("login-error", errorText(r));
      return;
    }
    await enter();
  });

  $("logout").addEventListener("click", async () => {
    forget();
    state.user = null;
    try {
      await api("POST", "v1/logout", { noLogin: true });
    } catch {
      // The session ends with the server anyway.
    }
    setText("who", "");
    showLogin("Logged out.");
  });

  // ---- groups and keys ----

  function button(text, onClick) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.addEventListener("click", onClick);
    return b;
  }

  async function listGroups(more) {
    if (!more) {
      state.groupsNext = "";
      $("groups").replaceChildren();
    }
    const q = new URLSearchParams({ prefix: $("groups-prefix").value, limit: pageSize });
    if (more) q.set("after", state.groupsNext);
    const r = await api("GET", "v1/groups?" + q);
    if (r.status !== 200) {
      if (r.status !== 401) status("Listing groups: " + errorText(r), true);
      return r.status;
    }
    for (const g of r.data.groups) {
      const li = document.createElement("li");
      li.dataset.group = g;
      li.append(button(g === "" ? '"" (Redis strings)' : g, () => selectGroup(g)));
      $("groups").append(li);
    }
    state.groupsNext = r.data.next;
    $("groups-more").hidden = !r.data.next;
    return r.status;
  }

  async function listKeys(more) {
    if (state.group === null) return null;
    if (!more) {
      state.keysNext = "";
      $("keys").replaceChildren();
    }
    const q = new URLSearchParams({ limit: pageSize });
    if (more) q.set("after", state.keysNext);
    const r = await api("GET", "v1/groups/" + enc(state.group) + "/keys?" + q);
    if (r.status !== 200) {
      if (r.status !== 401) status("Listing keys: " + errorText(r), true);
      return null;
    }
    for (const e of r.data.entries) {
      const li = document.createElement("li");
      li.dataset.key = e.key;
      const g = state.group;
      li.append(button(e.key, () => loadEntry(g, e.key)));
      $("keys").append(li);
    }
    state.keysNext = r.data.next;
    $("keys-more").hidden = !r.data.next;
    return r.data.revision;
  }

  async function selectGroup(g) {
    state.group = g;
    setText("keys-group", "Group: " + (g === "" ? '""' : g));
    $("entry-group").value = g;
    await listKeys(false);
  }

  $("groups-form").addEventListener("submit", (e) => {
    e.preventDefault();
    listGroups(false);
  });
  $("groups-more").addEventListener("click", () => listGroups(true));
  $("keys-more").addEventListener("click", () => listKeys(true));

  // ---- one entry ----

  function message(text, isError) {
    const el = $("entry-message");
    el.textContent = text;
    el.classList.toggle("error", !!isError);
  }

  function showEntry(group, key, e) {
    state.entry = { group, key, version: e.version };
    $("entry-group").value = group;
    $("entry-key").value = key;
    $("entry-value").value = e.value;
    $("entry-ttl").value = "";
    setText("entry-version", String(e.version));
    setText("entry-expires", e.expires_at || "never");
    hideConflict();
    syncButtons();
  }

  function clearEntry() {
    state.entry = null;
    setText("entry-version", "none");
    setText("entry-expires", "never");
    syncButtons();
  }

  // syncButtons enables Save and Delete while the form names the loaded
  // entry; Create is for a new key.
  function syncButtons() {
    const e = state.entry;
    const same = e !== null && $("entry-group").value === e.group && $("entry-key").value === e.key;
    $("entry-save").disabled = !same;
    $("entry-delete").disabled = !same;
  }
  $("entry-group").addEventListener("input", syncButtons);
  $("entry-key").addEventListener("input", syncButtons);

  async function loadEntry(group, key) {
    const r = await api("GET", keyURL(group, key));
    if (r.status === 200) {
      showEntry(group, key, r.data);
      message("Loaded " + key + ", version " + r.data.version + ".");
    } else if (r.status === 404) {
      clearEntry();
      message("No key " + JSON.stringify(key) + " in " + JSON.stringify(group) + ".", true);
    } else if (r.status !== 401) {
      message("Loading: " + errorText(r), true);
    }
  }

  function hideConflict() {
    state.conflict = null;
    $("conflict").hidden = true;
  }

  // conflict shows why a write was refused and the entry as it is now;
  // the form keeps what the user typed.
  async function conflict(group, key, why) {
    const r = await api("GET", keyURL(group, key));
    if (r.status === 200) {
      state.conflict = { group, key, entry: r.data };
      setText("conflict-text", why);
      setText("conflict-version", String(r.data.version));
      setText("conflict-value", r.data.value);
      $("conflict-load").hidden = false;
    } else {
      state.conflict = null;
      setText("conflict-text", why + " The key no longer exists.");
      setText("conflict-version", "none");
      setText("conflict-value", "");
      $("conflict-load").hidden = true;
    }
    $("conflict").hidden = false;
    message("Nothing was written.", true);
  }

  $("conflict-load").addEventListener("click", () => {
    const c = state.conflict;
    if (c) {
      showEntry(c.group, c.key, c.entry);
      message("Loaded the current value, version " + c.entry.version + ".");
    }
  });

  function ttlQuery() {
    const ttl = $("entry-ttl").value.trim();
    return ttl ? "?" + new URLSearchParams({ ttl }) : "";
  }

  $("entry-save").addEventListener("click", async () => {
    const e = state.entry;
    if (!e) return;
    const r = await api("PUT", keyURL(e.group, e.key) + ttlQuery(), {
      headers: { "If-Match": '"' + e.version + '"' },
      body: $("entry-value").value,
    });
    if (r.status === 200) {
      showEntry(e.group, e.key, r.data);
      message("Saved " + e.key + ", version " + r.data.version + ".");
    } else if (r.status === 412) {
      await conflict(e.group, e.key, "another client changed " + JSON.stringify(e.key) + " after you loaded version " + e.version + ".");
    } else if (r.status !== 401) {
      message("Saving: " + errorText(r), true);
    }
  });

  $("entry-create").addEventListener("click", async () => {
    const group = $("entry-group").value;
    const key = $("entry-key").value;
    const r = await api("PUT", keyURL(group, key) + ttlQuery(), {
      headers: { "If-None-Match": "*" },
      body: $("entry-value").value,
    });
    if (r.status === 200) {
      showEntry(group, key, r.data);
      message("Created " + key + ", version " + r.data.version + ".");
      if (state.group === group) listKeys(false);
    } else if (r.status === 412) {
      await conflict(group, key, JSON.stringify(key) + " already exists.");
    } else if (r.status !== 401) {
      message("Creating: " + errorText(r), true);
    }
  });

  $("entry-delete").addEventListener("click", async () => {
    const e = state.entry;
    if (!e) return;
    const r = await api("DELETE", keyURL(e.group, e.key), { headers: { "If-Match": '"' + e.version + '"' } });
    if (r.status === 204) {
      clearEntry();
      hideConflict();
      message("Deleted " + e.key + ".");
      if (state.group === e.group) listKeys(false);
    } else if (r.status === 412 || r.status === 404) {
      await conflict(e.group, e.key, "another client changed " + JSON.stringify(e.key) + " after you loaded version " + e.version + ".");
    } else if (r.status !== 401) {
      message("Deleting: " + errorText(r), true);
    }
  });

  $("entry-reload").addEventListener("click", () => {
    loadEntry($("entry-group").value, $("entry-key").value);
  });

  // ---- the live event pane ----

  // feed is where the pane is in the change feed: after the event with
  // index idx of revision rev (an SSE id "rev" is index 0, "rev-idx" the
  // following events of a transaction), or after all of rev when idx is
  // Infinity.
  // gen counts the users the page has forgotten: a retry begun for one
  // user must not open the feed for the next (retryFeed).
  const feed = { es: null, rev: 0, idx: Infinity, tries: 0, timer: 0, started: false, gen: 0 };

  function feedState(s, text) {
    const el = $("events-state");
    el.dataset.state = s;
    el.textContent = text;
  }

  function parseID(id) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(id || "");
    return m ? { rev: Number(m[1]), idx: m[2] ? Number(m[2]) : 0 } : null;
  }

  function afterParam() {
    return feed.idx === Infinity ? String(feed.rev) : feed.rev + "-" + feed.idx;
  }

  // where says where the pane is, for people.
  function where() {
    if (feed.idx === Infinity) return "revision " + feed.rev;
    return "event " + (feed.idx ? feed.rev + "-" + feed.idx : feed.rev);
  }

  // isNew reports whether the event at p comes after the pane's position.
  function isNew(p) {
    return p.rev > feed.rev || (p.rev === feed.rev && p.idx > feed.idx);
  }

  function addLine(cls, id, parts) {
    const li = document.createElement("li");
    li.className = cls;
    if (id) li.dataset.id = id;
    for (const [c, text] of parts) {
      const span = document.createElement("span");
      span.className = c;
      span.textContent = text;
      li.append(span, " ");
    }
    const list = $("events");
    list.append(li);
    while (list.children.length > maxEvents) list.firstElementChild.remove();
    li.scrollIntoView({ block: "nearest" });
  }

  function onEvent(e) {
    const p = parseID(e.lastEventId);
    if (!p || !isNew(p)) return; // seen already
    feed.rev = p.rev;
    feed.idx = p.idx;
    let ev;
    try {
      ev = JSON.parse(e.data);
    } catch {
      ev = { type: e.type, group: "?", key: "?" };
    }
    const parts = [["id", e.lastEventId], ["type", ev.type], ["name", ev.group + " / " + ev.key]];
    if (ev.type === "set") parts.push(["value", ev.value]);
    if (ev.version) parts.push(["version", "v" + ev.version]);
    addLine("event", e.lastEventId, parts);
  }

  async function onCompacted(e) {
    stopFeed();
    let n = "?";
    try {
      n = JSON.parse(e.data).compacted;
    } catch {
      // keep "?"
    }
    addLine("note", "", [["text", "Changes after " + where() + " are gone from the log (compacted through revision " + n + "): listed again, following from there."]]);
    feedState("compacted", "Compacted: listing again.");
    await listGroups(false);
    // The keys page, if one is shown, is listed again too, and its
    // revision is where the pane goes on.
    const rev = state.group !== null ? await listKeys(false) : await revisionNow();
    if (rev !== null) {
      feed.rev = rev;
      feed.idx = Infinity;
      openFeed();
    } else {
      retryFeed();
    }
  }

  // revisionNow answers the store's revision, from a keys page (whose
  // revision is the store's, whatever the group), or null.
  async function revisionNow() {
    try {
      const g = state.group === null ? "console" : state.group;
      const r = await api("GET", "v1/groups/" + enc(g) + "/keys?limit=1");
      return r.status === 200 ? r.data.revision : null;
    } catch {
      return null;
    }
  }

  function stopFeed() {
    clearTimeout(feed.timer);
    if (feed.es) {
      feed.es.close();
      feed.es = null;
    }
  }

  function openFeed() {
    stopFeed();
    if (!feed.started) return; // enter() has not read where to start
    const es = new EventSource("v1/events?" + new URLSearchParams({ after: afterParam() }));
    feed.es = es;
    es.onopen = () => {
      feed.tries = 0;
      feedState("live", "Live: following changes after " + where() + ".");
    };
    for (const t of eventTypes) es.addEventListener(t, onEvent);
    es.addEventListener("compacted", onCompacted);
    // Both a failed connection and the server's "event: error" land here.
    es.onerror = () => {
      if (feed.es !== es) return;
      es.close(); // no automatic reconnection: retryFeed resumes
      feed.es = null;
      retryFeed();
    };
  }

  // retryFeed reopens the stream after a backoff (0.25 s doubling to 5 s).
  // It checks the credentials first: a server that restarted has
  // forgotten the session, and EventSource cannot see a 401.
  function retryFeed() {
    const delay = Math.min(250 * 2 ** feed.tries, 5000);
    feed.tries++;
    feedState("retrying", "Disconnected; retrying in " + (delay / 1000).toFixed(1) + " s, from " + where() + ".");
    clearTimeout(feed.timer);
    const gen = feed.gen;
    feed.timer = setTimeout(async () => {
      let r;
      try {
        r = await api("GET", "v1/groups?limit=1");
      } catch {
        if (gen === feed.gen) retryFeed();
        return;
      }
      // While the request was out, the page may have forgotten the
      // user and logged another in, whose feed enter() opens from the
      // revision it reads: this retry, with the place reset to 0, would
      // replay that user's whole log.
      if (gen !== feed.gen) return;
      if (r.status === 401) {
        feedState("login", "Paused until you log in; it resumes after " + where() + ".");
        return;
      }
      openFeed();
    }, delay);
  }

  // ---- forgetting a user ----

  // forget stops the live pane and clears all the page shows of the
  // store (groups, keys, the entry, events) and its place in the feed.
  function forget() {
    stopFeed();
    Object.assign(feed, { rev: 0, idx: Infinity, tries: 0, started: false, gen: feed.gen + 1 });
    Object.assign(state, { group: null, groupsNext: "", keysNext: "" });
    for (const id of ["groups", "keys", "events"]) $(id).replaceChildren();
    $("groups-more").hidden = true;
    $("keys-more").hidden = true;
    $("groups-form").reset();
    $("entry-form").reset();
    setText("keys-group", "Choose a group.");
    clearEntry();
    hideConflict();
    message("");
    feedState("", "");
    status("");
  }

  // ---- start ----

  // enter shows the app after a login (or without one) and starts or
  // resumes the live pane.
  async function enter() {
    showApp();
    const code = await listGroups(false);
    if (code === 401) return;
    if (state.group !== null) await listKeys(false);
    if (!feed.started) {
      const rev = await revisionNow();
      if (rev === null) return;
      feed.rev = rev;
      feed.idx = Infinity;
      feed.started = true;
    }
    status("");
    openFeed();
  }

  async function start() {
    let r;
    try {
      r = await api("GET", "v1/groups?limit=1");
    } catch (err) {
      status("The server cannot be reached: " + err.message, true);
      return;
    }
    if (r.status === 401) return; // api showed the login form
    // Allowed in: by a session cookie, or because the server has no
    // users. A login without a body tells which (404
    // auth_not_configured, or 400 without checking any password), so
    // that Log out shows only where it means something.
    try {
      const l = await api("POST", "v1/login", { headers: { "Content-Type": "application/json" }, body: "", noLogin: true });
      state.authKnown = !(l.status === 404 && l.data && l.data.code === "auth_not_configured");
      setText("who", state.authKnown ? "Logged in." : "This server has no users: no login needed.");
    } catch {
      // Leave Log out hidden.
    }
    await enter();
  }

  start();
})();
