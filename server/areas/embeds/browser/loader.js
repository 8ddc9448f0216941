/* Persona embed loader, served as /embed.js (server/areas/embeds/browser/, docs/design/embeds.md).
 * <script src="https://persona.example/embed.js" data-persona="<persona id>" async></script>
 * Adds a chat bubble to the page; the bubble opens the persona's chat page in an <iframe>. The
 * chat runs in that frame, on the service's origin: nothing of the persona reaches this page's DOM
 * except through the frame, and this script reads nothing of the page. Optional attributes:
 * data-label (the bubble's text, "Chat" by default), data-position="left". */
/* global document, window, location, console, URL, CSSStyleSheet */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || !script.src) return;
  var persona = script.getAttribute("data-persona") || "";
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(persona)) {
    console.warn("Persona embed: data-persona must be a persona id");
    return;
  }
  // The service's base URL: the script's own URL without "/embed.js" (a service under a path keeps it).
  var base = script.src.replace(/\/embed\.js(?:[?#].*)?$/, "");
  var service = new URL(base).origin;
  var label = (script.getAttribute("data-label") || "Chat").slice(0, 40);
  var side = script.getAttribute("data-position") === "left" ? "left" : "right";

  var css =
    ":host{all:initial}" +
    ".bubble{position:fixed;bottom:20px;" + side + ":20px;z-index:2147483000;display:flex;align-items:center;gap:8px;" +
    "min-height:52px;padding:0 20px 0 16px;border:0;border-radius:26px;background:#2350c8;color:#fff;" +
    "font:600 16px/1 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;box-shadow:0 4px 16px rgba(0,0,0,.25);cursor:pointer}" +
    ".bubble:hover{background:#1b3fa0}" +
    ".bubble:focus-visible{outline:3px solid #fff;box-shadow:0 0 0 6px #2350c8}" +
    ".bubble svg{width:22px;height:22px;fill:currentColor}" +
    ".panel{position:fixed;bottom:88px;" + side + ":20px;z-index:2147483000;width:min(380px,calc(100vw - 40px));" +
    "height:min(600px,calc(100vh - 120px));border-radius:14px;overflow:hidden;background:#fff;box-shadow:0 8px 32px rgba(0,0,0,.3)}" +
    ".panel[hidden]{display:none}" +
    ".panel iframe{display:block;width:100%;height:100%;border:0}" +
    "@media (max-width:480px){.panel{inset:0;width:100%;height:100%;border-radius:0}}";

  var host = document.createElement("div");
  host.setAttribute("data-persona-embed", persona);
  var root = host.attachShadow ? host.attachShadow({ mode: "open" }) : host;
  // A constructed stylesheet works under a page's strict style-src; a <style> element where there is none.
  if (root !== host && "adoptedStyleSheets" in root && typeof CSSStyleSheet === "function" && CSSStyleSheet.prototype.replaceSync) {
    var sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    root.adoptedStyleSheets = [sheet];
  } else {
    var style = document.createElement("style");
    style.textContent = css;
    root.appendChild(style);
  }

  var panelId = "persona-embed-" + persona;
  var button = document.createElement("button");
  button.type = "button";
  button.className = "bubble";
  button.setAttribute("aria-expanded", "false");
  button.setAttribute("aria-controls", panelId);
  var icon = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  icon.setAttribute("viewBox", "0 0 24 24");
  icon.setAttribute("aria-hidden", "true");
  var path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", "M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z");
  icon.appendChild(path);
  button.appendChild(icon);
  button.appendChild(document.createTextNode(label));

  var panel = document.createElement("div");
  panel.className = "panel";
  panel.id = panelId;
  panel.hidden = true;
  var frame = null;

  function open() {
    if (!frame) {
      // Made on first open: a page with the bubble loads nothing of the chat until a visitor asks.
      frame = document.createElement("iframe");
      frame.src = base + "/embed/" + persona + "?bubble=1&host=" + encodeURIComponent(location.origin);
      frame.title = "Chat";
      frame.setAttribute("allow", "autoplay");
      panel.appendChild(frame);
    }
    panel.hidden = false;
    button.setAttribute("aria-expanded", "true");
    frame.focus();
  }

  function close() {
    panel.hidden = true;
    button.setAttribute("aria-expanded", "false");
    button.focus();
  }

  button.addEventListener("click", function () {
    if (panel.hidden) open();
    else close();
  });
  root.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) close();
  });
  // The chat's visitor token, kept here for a chat that a browser denies storage of its own (a frame
  // of another site): it names this page's visitor to this persona's chat, and is good for nothing else.
  var storageKey = "persona-embed:" + persona;
  function stored() {
    try {
      return window.localStorage.getItem(storageKey);
    } catch {
      return null;
    }
  }
  function keep(token) {
    try {
      if (typeof token === "string" && /^eg_[A-Za-z0-9_-]{43}$/.test(token)) window.localStorage.setItem(storageKey, token);
      else if (token === null) window.localStorage.removeItem(storageKey);
    } catch {
      // no storage here either: the chat keeps its token for this visit only
    }
  }
  // Only the chat's own frame is listened to: it asks to close (its close button, Escape), for the
  // token kept here, or to keep a new one.
  window.addEventListener("message", function (event) {
    if (!frame || event.origin !== service || event.source !== frame.contentWindow || !event.data) return;
    var type = event.data.type;
    if (type === "persona-embed:close") close();
    else if (type === "persona-embed:ready") frame.contentWindow.postMessage({ type: "persona-embed:token", token: stored() }, service);
    else if (type === "persona-embed:keep") keep(event.data.token);
  });

  root.appendChild(button);
  root.appendChild(panel);
  function attach() {
    document.body.appendChild(host);
  }
  if (document.body) attach();
  else document.addEventListener("DOMContentLoaded", attach);
})();
