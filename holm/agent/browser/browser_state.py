"""A browser's state: its cookies (`…/cookies`) and its storage saved and loaded as
Playwright's storage state (`…/state/…`): cookies, each origin's localStorage (and
sessionStorage, and with `indexed_db` its IndexedDB), read and written in a page of that
origin. Never a batch step, never in a trace: it holds sign-ins (docs/security.md).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlsplit

from holm.agent.browser.pages import Pages, navigate
from holm.errors import BadRequest, Failed
from holm.wire import actions as a
from holm.wire import results as r


async def cookies(pages: Pages, what: a.CookiesWhat) -> r.CookieList:
    async with pages.session(None) as cdp:
        match what.do:
            case "get":
                if what.url is None:
                    got = await cdp.call("Network.getAllCookies")
                else:
                    got = await cdp.call("Network.getCookies", {"urls": [what.url]})
                return r.CookieList(cookies=[_cookie(c) for c in got.get("cookies", [])])
            case "set":
                sent = [_cookie_param(c, what.url) for c in what.cookies]
                await cdp.call("Network.setCookies", {"cookies": sent})
                return r.CookieList(changed=len(sent))
        if what.url is None:
            count = len((await cdp.call("Network.getAllCookies")).get("cookies", []))
            await cdp.call("Network.clearBrowserCookies")
            return r.CookieList(changed=count)
        found = (await cdp.call("Network.getCookies", {"urls": [what.url]})).get("cookies", [])
        for c in found:
            params = {"name": c["name"], "domain": c["domain"], "path": c.get("path", "/")}
            await cdp.call("Network.deleteCookies", params)
        return r.CookieList(changed=len(found))


async def save_state(pages: Pages, what: a.StateSaveWhat) -> r.BrowserState:
    async with pages.session(None) as cdp:
        cookies = (await cdp.call("Network.getAllCookies")).get("cookies", [])
    wanted = {o.rstrip("/") for o in what.origins}
    origins: list[dict[str, Any]] = []
    for tab in await pages.tabs():
        parts = urlsplit(tab.url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if parts.scheme not in ("http", "https") or (wanted and origin not in wanted):
            continue
        if any(o["origin"] == origin for o in origins):
            continue
        async with pages.session(tab.tab) as cdp:
            stored = await cdp.run(
                "const dump = s => Object.entries(s)"
                ".map(([name, value]) => ({name, value}));"
                "return {local: A.local ? dump(localStorage) : [],"
                " session: A.session ? dump(sessionStorage) : []};",
                local=not what.no_local_storage,
                session=what.session_storage,
            )
            databases = await cdp.run(_IDB_SAVE) if what.indexed_db else None
        entry: dict[str, Any] = {"origin": origin, "localStorage": stored["local"]}
        if what.session_storage:
            entry["sessionStorage"] = stored["session"]
        if databases is not None:
            if "error" in databases:
                raise Failed(f"the IndexedDB of {origin} could not be read: {databases['error']}")
            entry["indexedDB"] = databases["databases"]
        origins.append(entry)
    state = {"cookies": [_playwright_cookie(c) for c in cookies], "origins": origins}
    return r.BrowserState(
        cookies=len(cookies), origins=len(origins), session_json=json.dumps(state)
    )


async def load_state(pages: Pages, session_json: str) -> r.StateLoaded:
    try:
        state = json.loads(session_json)
        cookies = [_cdp_cookie(c) for c in state.get("cookies", [])]
        origins = list(state.get("origins", []))
    except (ValueError, AttributeError, KeyError, TypeError) as exc:
        raise BadRequest(f"session_json is not a storage state: {exc}") from None
    async with pages.session(None) as cdp:
        if cookies:
            await cdp.call("Network.setCookies", {"cookies": cookies})
    for entry in origins:
        origin = str(entry.get("origin", "")).rstrip("/")
        items = {**_items(entry.get("localStorage")), **_items(entry.get("sessionStorage"))}
        databases = entry.get("indexedDB") or []
        if not isinstance(databases, list):
            raise BadRequest(f"the indexedDB of {origin} is not a list of databases")
        if not origin or not (items or databases):
            continue
        # Storage belongs to an origin: it is written from a page of that origin.
        page = dict(await pages.devtools_json("PUT", "/json/new?" + quote("about:blank", safe="")))
        try:
            async with pages.session(page) as cdp:
                await navigate(cdp, origin + "/")
                await cdp.run(
                    "for (const [k, v] of A.local) localStorage.setItem(k, v);"
                    "for (const [k, v] of A.session) sessionStorage.setItem(k, v);"
                    "return null;",
                    local=list(_items(entry.get("localStorage")).items()),
                    session=list(_items(entry.get("sessionStorage")).items()),
                )
                if databases:
                    put = await cdp.run(_IDB_LOAD, databases=databases)
                    if put is not None:
                        raise Failed(f"the IndexedDB of {origin} could not be loaded: {put}")
        finally:
            await pages.close_and_wait(page["id"])
    return r.StateLoaded(cookies=len(cookies), origins=len(origins))


# An origin's IndexedDB as Playwright's storage state keeps it (`indexedDB`: databases of
# stores, each with its key path, indexes and records), read in a page of the origin: a
# record's key is kept only where the store has no key path (an inline key is in the value).
# Values are kept as JSON (a Date becomes its ISO text, a Blob nothing).
_IDB_SAVE = """
  const done = r => new Promise((ok, no) => {
    r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
  const path = p => Array.isArray(p) ? {keyPathArray: p} : p === null ? {} : {keyPath: p};
  try {
    const databases = [];
    for (const info of await indexedDB.databases()) {
      const db = await done(indexedDB.open(info.name));
      const stores = [];
      for (const name of db.objectStoreNames) {
        const store = db.transaction(name, "readonly").objectStore(name);
        const [keys, values] = await Promise.all([done(store.getAllKeys()), done(store.getAll())]);
        const indexes = Array.from(store.indexNames, n => store.index(n)).map(i =>
          ({name: i.name, ...path(i.keyPath), multiEntry: i.multiEntry, unique: i.unique}));
        const records = values.map((value, i) =>
          store.keyPath === null ? {key: keys[i], value} : {value});
        stores.push({name, autoIncrement: store.autoIncrement, ...path(store.keyPath),
          records: JSON.parse(JSON.stringify(records)), indexes});
      }
      databases.push({name: db.name, version: db.version, stores});
      db.close();
    }
    return {databases};
  } catch (e) { return {error: String(e)}; }
"""
# And written back: each database opened at its version, its stores and indexes made where
# missing, its records put. Answers null, or what went wrong.
_IDB_LOAD = """
  const done = r => new Promise((ok, no) => {
    r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
  const path = o => o.keyPathArray || (o.keyPath === undefined ? null : o.keyPath);
  try {
    for (const d of A.databases) {
      const opening = indexedDB.open(d.name, d.version || 1);
      opening.onupgradeneeded = () => {
        const db = opening.result, tx = opening.transaction;
        for (const s of d.stores || []) {
          const store = db.objectStoreNames.contains(s.name) ? tx.objectStore(s.name) :
            db.createObjectStore(s.name, {keyPath: path(s), autoIncrement: !!s.autoIncrement});
          for (const i of s.indexes || [])
            if (!store.indexNames.contains(i.name))
              store.createIndex(i.name, path(i), {unique: !!i.unique, multiEntry: !!i.multiEntry});
        }
      };
      const db = await done(opening);
      for (const s of d.stores || []) {
        if (!db.objectStoreNames.contains(s.name)) { db.close(); return `no store ${s.name}`; }
        const tx = db.transaction(s.name, "readwrite"), store = tx.objectStore(s.name);
        for (const rec of s.records || [])
          if (store.keyPath === null && rec.key !== undefined) store.put(rec.value, rec.key);
          else store.put(rec.value);
        await new Promise((ok, no) => { tx.oncomplete = ok; tx.onerror = () => no(tx.error); });
      }
      db.close();
    }
    return null;
  } catch (e) { return String(e); }
"""


def _items(stored: object) -> dict[str, str]:
    if not isinstance(stored, list):
        return {}
    return {str(i["name"]): str(i["value"]) for i in stored if isinstance(i, dict)}


def _playwright_cookie(c: dict[str, Any]) -> dict[str, Any]:
    """A DevTools cookie as Playwright's storage state writes it."""
    return {
        "name": c["name"],
        "value": c.get("value", ""),
        "domain": c.get("domain", ""),
        "path": c.get("path", "/"),
        "expires": -1 if c.get("session") else c.get("expires", -1),
        "httpOnly": bool(c.get("httpOnly")),
        "secure": bool(c.get("secure")),
        "sameSite": c.get("sameSite", "Lax"),
    }


def _cdp_cookie(c: dict[str, Any]) -> dict[str, Any]:
    cookie = {
        "name": c["name"],
        "value": c["value"],
        "domain": c["domain"],
        "path": c.get("path", "/"),
        "httpOnly": bool(c.get("httpOnly")),
        "secure": bool(c.get("secure")),
    }
    if c.get("sameSite") in ("Strict", "Lax", "None"):
        cookie["sameSite"] = c["sameSite"]
    if isinstance(c.get("expires"), int | float) and c["expires"] > 0:
        cookie["expires"] = c["expires"]
    return cookie


def _cookie(c: dict[str, Any]) -> r.Cookie:
    expires = c.get("expires")
    return r.Cookie(
        name=c["name"],
        value=c.get("value", ""),
        domain=c.get("domain", ""),
        path=c.get("path", "/"),
        http_only=bool(c.get("httpOnly")),
        secure=bool(c.get("secure")),
        same_site=c.get("sameSite"),
        expires=None if c.get("session") or expires is None or expires < 0 else expires,
    )


def _cookie_param(c: a.CookieIn, url: str | None) -> dict[str, Any]:
    if url is None and c.domain is None:
        raise BadRequest(f"cookie {c.name!r} needs a url or a domain")
    param: dict[str, Any] = {
        "name": c.name,
        "value": c.value,
        "httpOnly": c.http_only,
        "secure": c.secure,
    }
    if url is not None and c.domain is None:
        param["url"] = url
    for key, value in (("domain", c.domain), ("path", c.path), ("sameSite", c.same_site)):
        if value is not None:
            param[key] = value
    if c.expires is not None:
        param["expires"] = c.expires
    return param
