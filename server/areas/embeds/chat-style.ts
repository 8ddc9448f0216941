import { createHash } from "node:crypto";

/**
 * The chat page's stylesheet: a compact chat that fills its frame (a phone's whole screen, or the
 * bubble's panel), light and dark from the reader's `prefers-color-scheme`, visible keyboard focus,
 * colours of WCAG AA contrast in both schemes. Sent inline, allowed by its hash
 * (`CHAT_STYLE_SOURCE`): one request less before the first paint, and no `'unsafe-inline'`.
 */
export const CHAT_STYLE = `
:root{color-scheme:light dark;--bg:#fff;--fg:#16181d;--muted:#555c6b;--line:#d5d9e0;--mine:#2350c8;--mine-fg:#fff;--theirs:#eef0f4;--code:#e2e5eb;--accent:#2350c8;--danger:#9f1f16}
@media (prefers-color-scheme:dark){:root{--bg:#15171c;--fg:#e8eaef;--muted:#aab1bf;--line:#3a404c;--mine:#93b2ff;--mine-fg:#0b0f1c;--theirs:#232731;--code:#2f3440;--accent:#93b2ff;--danger:#ffb3a9}}
*,*::before,*::after{box-sizing:border-box}
html,body{height:100%;margin:0}
body{background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;overflow-wrap:anywhere}
.chat{display:flex;flex-direction:column;height:100%}
.bar{display:flex;align-items:center;gap:.6rem;padding:.6rem .75rem;border-bottom:1px solid var(--line)}
.bar h1{flex:1;margin:0;font-size:1rem;line-height:1.2;min-width:0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.avatar{width:36px;height:36px;border-radius:50%;object-fit:cover;flex:none;background:var(--theirs)}
.initial{display:flex;align-items:center;justify-content:center;font-weight:700;color:var(--accent)}
button{font:inherit;font-weight:600;border-radius:8px;cursor:pointer;min-height:36px;padding:0 .8rem;border:1px solid var(--line);background:var(--bg);color:var(--fg)}
button[aria-pressed=true]{background:var(--accent);border-color:var(--accent);color:var(--mine-fg)}
button[hidden],form[hidden]{display:none}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.log{flex:1;overflow-y:auto;padding:.75rem;display:flex;flex-direction:column;gap:.6rem}
.msg{max-width:88%;padding:.5rem .75rem;border-radius:14px;background:var(--theirs);align-self:flex-start}
.msg.user{background:var(--mine);color:var(--mine-fg);align-self:flex-end}
.msg .text{white-space:pre-wrap}
.msg .text p,.msg .text ul,.msg .text ol,.msg .text pre{margin:0 0 .5rem;white-space:normal}
.msg .text>:last-child{margin-bottom:0}
.msg .text ul,.msg .text ol{padding-left:1.25rem}
.msg a{color:inherit;text-decoration-thickness:2px}
code{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:.9em;background:var(--code);border-radius:4px;padding:0 .2em}
.msg.user code{background:transparent;border:1px solid currentColor}
pre{overflow-x:auto;background:var(--code);border-radius:8px;padding:.5rem}
pre code{background:none;padding:0;white-space:pre}
.listen{margin-top:.35rem;min-height:30px;font-size:.8rem;padding:0 .6rem}
.note{margin:.25rem 0 0;font-size:.8rem;color:var(--muted)}
.status{margin:0;padding:0 .75rem;min-height:1.2rem;font-size:.85rem;color:var(--danger)}
.composer{display:flex;gap:.5rem;padding:.6rem .75rem .75rem;border-top:1px solid var(--line)}
.composer textarea{flex:1;resize:none;min-height:40px;max-height:8rem;padding:.5rem .6rem;font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--muted);border-radius:8px}
.composer button{min-height:40px;background:var(--accent);border-color:var(--accent);color:var(--mine-fg)}
.composer #stop{background:var(--bg);color:var(--fg);border-color:var(--muted)}
.visually-hidden{position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}
`.trim();

/** The CSP source that allows exactly this stylesheet. */
export const CHAT_STYLE_SOURCE = `'sha256-${createHash("sha256").update(CHAT_STYLE).digest("base64")}'`;
