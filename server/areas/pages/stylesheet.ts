import { createHash } from "node:crypto";

/**
 * The one stylesheet of the built-in pages: fluid down to a phone's width, light and dark from the
 * reader's `prefers-color-scheme`, visible keyboard focus, colours that keep WCAG AA contrast in
 * both schemes. It is sent inline in a `<style>` element that the Content-Security-Policy allows by
 * its hash (`STYLESHEET_SOURCE`), so no `'unsafe-inline'` and no second request. Nothing here may
 * depend on a style attribute: the policy refuses those.
 */
export const STYLESHEET = `
:root{color-scheme:light dark;--bg:#f5f6f8;--fg:#16181d;--muted:#555c6b;--card:#fff;--border:#cfd4dc;--accent:#2350c8;--accent-fg:#fff;--accent-soft:#e6ecfb;--danger:#9f1f16;--danger-bg:#fdecea;--ok:#185c2c;--ok-bg:#e5f4e9;--code-bg:#eef0f4}
@media (prefers-color-scheme:dark){:root{--bg:#101217;--fg:#e8eaef;--muted:#aab1bf;--card:#1a1d24;--border:#3a404c;--accent:#93b2ff;--accent-fg:#0b0f1c;--accent-soft:#1f2a45;--danger:#ffb3a9;--danger-bg:#3a1411;--ok:#9fe0b0;--ok-bg:#102a18;--code-bg:#252932}}
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:1rem/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;overflow-wrap:anywhere}
a{color:var(--accent)}
a:hover{text-decoration-thickness:2px}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px;border-radius:2px}
.skip{position:absolute;left:-9999px;top:0;background:var(--card);color:var(--fg);padding:.5rem 1rem;z-index:1}
.skip:focus{left:.5rem;top:.5rem}
.visually-hidden{position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}
.site{border-bottom:1px solid var(--border);background:var(--card)}
.site p{max-width:46rem;margin:0 auto;padding:.75rem 1rem;font-weight:700;letter-spacing:.02em}
main{display:block;max-width:46rem;margin:0 auto;padding:1.5rem 1rem 3rem}
footer{max-width:46rem;margin:0 auto;padding:0 1rem 2rem;color:var(--muted);font-size:.875rem}
h1{font-size:clamp(1.5rem,4.5vw,2.1rem);line-height:1.2;margin:0 0 .5rem}
h2{font-size:1.2rem;margin:2rem 0 .6rem}
p{margin:0 0 .9rem}
.card{background:var(--card);border:1px solid var(--border);border-radius:12px;padding:1.25rem}
.narrow{max-width:30rem;margin:0 auto}
.muted{color:var(--muted)}
.text{white-space:pre-line}
.head{display:flex;gap:1rem;align-items:center;flex-wrap:wrap;margin-bottom:1rem}
.head div{min-width:0;flex:1 1 14rem}
.avatar{width:112px;height:112px;border-radius:50%;object-fit:cover;flex:none;background:var(--accent-soft)}
.initial{display:flex;align-items:center;justify-content:center;font-size:3rem;font-weight:700;color:var(--accent)}
.stats{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;list-style:none;padding:0;margin:0 0 1rem}
.stats strong{font-size:1.15rem}
.tags{display:flex;flex-wrap:wrap;gap:.4rem;list-style:none;padding:0;margin:.25rem 0 1rem}
.tags li{background:var(--accent-soft);border-radius:999px;padding:.1rem .7rem;font-size:.875rem}
.badge{display:inline-block;border:1px solid var(--border);border-radius:6px;padding:0 .45rem;font-size:.8rem;vertical-align:middle}
blockquote{margin:0 0 .8rem;padding:.75rem 1rem;border-left:4px solid var(--accent);background:var(--card);border-radius:0 8px 8px 0;white-space:pre-line}
.dist{display:grid;grid-template-columns:auto 1fr auto;gap:.35rem .75rem;align-items:center;margin:0 0 1rem;max-width:26rem}
.dist meter{width:100%;height:.9rem}
.review{border-top:1px solid var(--border);padding:.75rem 0}
.review p{margin:0 0 .3rem}
.stars{color:var(--accent);letter-spacing:.1em}
pre{background:var(--code-bg);border-radius:8px;padding:.75rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all;font-size:.875rem}
code{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace}
label{display:block;font-weight:600;margin:1rem 0 .3rem}
input[type=password],input[type=text]{width:100%;padding:.6rem .7rem;font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--muted);border-radius:6px}
input[aria-invalid=true]{border-color:var(--danger);border-width:2px}
.hint{font-size:.875rem;color:var(--muted);margin:.3rem 0 0}
.field-error{color:var(--danger);font-size:.9rem;margin:.3rem 0 0;font-weight:600}
.alert{background:var(--danger-bg);color:var(--danger);border:1px solid currentColor;border-radius:8px;padding:.7rem .9rem}
.success{background:var(--ok-bg);color:var(--ok);border:1px solid currentColor;border-radius:8px;padding:.7rem .9rem}
button{display:inline-block;margin-top:1.25rem;padding:.65rem 1.4rem;font:inherit;font-weight:600;color:var(--accent-fg);background:var(--accent);border:2px solid var(--accent);border-radius:8px;cursor:pointer;min-height:44px}
button:hover{filter:brightness(1.08)}
ul.plain{padding-left:1.2rem}
`.trim();

/** The CSP source that allows exactly this stylesheet. */
export const STYLESHEET_SOURCE = `'sha256-${createHash("sha256").update(STYLESHEET).digest("base64")}'`;
