import { html, type SafeHtml } from "./html.js";
import type { JobView, StatusView, TermView } from "./statusView.js";

/**
 * Renders the status view as one self-contained HTML page: inline CSS and one small inline script, no external
 * assets. Every value goes through the `html` tag (escaped). The page carries `nonce` on its style and script, so the
 * Content-Security-Policy of {@link statusPageHeaders} can forbid everything else. Elements the tests read carry
 * `data-field` / `data-job` / `data-queue` attributes.
 */

/** Options of {@link renderStatusPage}. */
export interface RenderOptions {
  /** A fresh random value per response, for the CSP's `nonce-…`. */
  nonce: string;
}

/** Response headers for a page rendered with `nonce`: no caching (it is live), a CSP that allows nothing external. */
export function statusPageHeaders(nonce: string): Record<string, string> {
  return {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    // The function key may be in the URL (?code=): never send it anywhere.
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
  };
}

/** The whole page. */
export function renderStatusPage(view: StatusView, options: RenderOptions): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${pageTitle(view)}</title>
<noscript><meta http-equiv="refresh" content="${Math.round(view.refreshMs / 1000)}"></noscript>
<style nonce="${options.nonce}">${STYLE}</style>
</head>
<body data-refresh-ms="${view.refreshMs}" data-refreshes="0">
<p id="refresh-state" role="status" hidden></p>
${renderMain(view)}
<script nonce="${options.nonce}">${REFRESH_SCRIPT}</script>
</body>
</html>
`.text;
}

function pageTitle(view: StatusView): string {
  return view.leader?.holder === undefined ? "Coordinator status" : `Coordinator status — epoch ${view.leader.epoch}`;
}

/** The part the page replaces on every refresh (its title goes along in data-title). */
function renderMain(view: StatusView): SafeHtml {
  return html`<main data-title="${pageTitle(view)}">
<header>
<h1>Coordinator status</h1>
<p class="muted">Rendered <time data-field="rendered-at" datetime="${view.renderedAt}">${view.renderedAt}</time> · refreshes every ${Math.round(view.refreshMs / 1000)} s</p>
</header>
${view.problems.length > 0 && html`<section class="problems" data-field="problems"><h2>Could not read</h2><ul>${view.problems.map((problem) => html`<li>${problem}</li>`)}</ul></section>`}
${renderLeader(view)}
${renderTimeline(view)}
${renderJobs(view)}
${renderFailures(view)}
${renderLimits(view)}
${renderPoison(view)}
${renderRetention(view)}
</main>`;
}

/**
 * Why nobody holds the lease: between ticks every leader releases it; a lapsed one (a leader killed or frozen) expired
 * or was broken by a takeover, and until then `GET /leader` named that holder — the page says which, so the two reads
 * are not taken for a contradiction.
 */
function whyFree(leader: { epoch: number; leaseState: string }): string {
  if (leader.leaseState === "broken")
    return `The lease of epoch ${leader.epoch} was broken: a takeover ended a term that had fallen silent (its process killed or frozen); the next tick elects again.`;
  if (leader.leaseState === "expired")
    return `The lease of epoch ${leader.epoch} expired: its holder stopped renewing it (its process killed or frozen); the next tick elects again.`;
  return "Each tick's leader releases the lease when its step ends; the next tick elects again.";
}

function renderLeader(view: StatusView): SafeHtml {
  const leader = view.leader;
  if (leader === undefined)
    return html`<section id="leader"><h2>Leader</h2><p>Unknown: the lease could not be read.</p></section>`;
  const since =
    leader.since === undefined
      ? html`never`
      : html`<time data-field="leader-since" datetime="${leader.since}">${leader.since}</time> (${leader.sinceAgo} ago)`;
  const who =
    leader.holder === undefined
      ? html`<p class="big"><span data-field="leader-holder" data-holder="">Nobody holds the lease</span> right now.</p>
<p class="muted">${whyFree(leader)}</p>`
      : html`<p class="big"><span class="holder" data-field="leader-holder" data-holder="${leader.holder}">${leader.holder}</span> leads.</p>`;
  const revocation =
    leader.revocation === undefined
      ? undefined
      : html`<dt>Step-down</dt><dd>requested for epoch ${leader.revocation.epoch}; ${leader.revocation.honoured ? "honoured" : "pending"}</dd>`;
  return html`<section id="leader"><h2>Leader</h2>
${who}
<dl class="facts">
<dt>Epoch</dt><dd data-field="leader-epoch">${leader.epoch}</dd>
<dt>${leader.holder === undefined ? "Last term began" : "Since"}</dt><dd>${since}</dd>
<dt>Terms so far</dt><dd data-field="leader-transitions">${leader.transitions}</dd>
<dt>Lease</dt><dd data-field="lease-state">${leader.leaseState}</dd>
${revocation}
</dl>
</section>`;
}

/** Lanes per holder; a mark where each term began (labelled with its epoch); the current term runs to "now". */
function renderTimeline(view: StatusView): SafeHtml {
  const { terms, holders } = view.timeline;
  if (terms.length === 0) return html`<section id="terms"><h2>Recent terms</h2><p>No term recorded yet.</p></section>`;
  const laneHeight = 26;
  const gutter = 250; // lane labels left of it, marks right of it
  const width = 1000;
  const left = gutter + 6;
  const right = width - 40;
  const height = holders.length * laneHeight + 22;
  const x = (term: TermView): number => Math.round(left + term.position * (right - left));
  const lanes = holders.map(
    (holder, index) =>
      html`<g class="h${index % 8}"><rect class="lane" x="0" y="${index * laneHeight}" width="${width}" height="${laneHeight - 2}"></rect><text class="lane-label" x="8" y="${index * laneHeight + 16}">${shorten(holder, 34)}<title>${holder}</title></text></g>`,
  );
  const marks = terms.map((term) => {
    const y = term.holderIndex * laneHeight;
    // Its span, from its start to its end (now while it leads); a term whose end was not recorded has its mark only.
    const end = term.endPosition === undefined ? undefined : Math.round(left + term.endPosition * (right - left));
    const bar =
      end === undefined
        ? undefined
        : html`<rect class="${term.current ? "current" : "span"}" x="${x(term)}" y="${y + 3}" width="${Math.max(3, end - x(term))}" height="${laneHeight - 8}"></rect>`;
    const how = term.ended === undefined ? "" : `, ${term.ended}`;
    const lasted = term.lasted === undefined ? "" : `, lasted ${term.lasted}`;
    return html`<g class="h${term.holderIndex % 8}">${bar}<rect class="mark" x="${x(term) - 1}" y="${y + 2}" width="3" height="${laneHeight - 6}"><title>epoch ${term.epoch}: ${term.holder}, began ${term.since}${lasted}${how}</title></rect><text class="epoch" x="${x(term) + 4}" y="${y + laneHeight - 6}">${term.epoch}</text></g>`;
  });
  const axis = html`<text class="axis" x="${left}" y="${height - 4}">${view.timeline.start ?? ""}</text><text class="axis" x="${right}" y="${height - 4}" text-anchor="end">now</text>`;
  const rows = [...terms]
    .reverse()
    .map(
      (term) =>
        html`<tr data-epoch="${term.epoch}"><td class="num">${term.epoch}</td><td><span class="swatch h${term.holderIndex % 8}"></span>${term.holder}</td><td><time datetime="${term.since}">${term.since}</time></td><td class="num">${term.sinceAgo} ago</td><td class="num">${term.lasted ?? "–"}</td><td>${term.ended ?? "–"}</td></tr>`,
    );
  return html`<section id="terms"><h2>Recent terms</h2>
<p class="muted">The last ${terms.length} terms, one lane per instance; each mark is a term's start, labelled with its epoch, and its bar how long it lasted (to its last step's end).</p>
<svg class="timeline" viewBox="0 0 ${width} ${height}" role="img" aria-label="Timeline of the last ${terms.length} leadership terms">${lanes}${marks}${axis}</svg>
<details><summary>As a table</summary>
<table><thead><tr><th>Epoch</th><th>Holder</th><th>Began</th><th>Ago</th><th>Lasted</th><th>Ended</th></tr></thead><tbody>${rows}</tbody></table>
</details>
</section>`;
}

/** At most `max` characters, the middle elided (instance ids differ at both ends: region and pid). */
function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.ceil((max - 1) / 2);
  return `${text.slice(0, head)}…${text.slice(text.length - (max - 1 - head))}`;
}

function renderJobs(view: StatusView): SafeHtml {
  const { active, pending, recent, moreActive } = view.jobs;
  const current = [...active, ...pending];
  return html`<section id="jobs"><h2>Jobs</h2>
<h3>Active <span class="muted">(${active.length + moreActive} running, ${pending.length} waiting for a leader)</span></h3>
${current.length === 0 ? html`<p class="muted">No active jobs.</p>` : jobTable(current)}
${moreActive > 0 && html`<p class="muted">and ${moreActive} more running jobs.</p>`}
<h3>Recently ended</h3>
${recent.length === 0 ? html`<p class="muted">None yet.</p>` : jobTable(recent)}
</section>`;
}

function jobTable(jobs: readonly JobView[]): SafeHtml {
  return html`<table class="jobs"><thead><tr><th>Job</th><th>Kind</th><th>Status</th><th class="wide">Progress</th><th>Done</th><th>Failed</th><th>Dispatched</th><th>Total</th><th>Age</th><th title="The epoch of the leader's term that last wrote the job: not the leader's now">Written in epoch</th></tr></thead>
<tbody>${jobs.map(jobRow)}</tbody></table>`;
}

function jobRow(job: JobView): SafeHtml {
  const reasons =
    job.reasons.length === 0 && job.failureReason === undefined
      ? undefined
      : html`<tr class="reasons" data-reasons-of="${job.id}"><td></td><td colspan="9"><ul>${job.failureReason !== undefined && html`<li class="bad">the job failed: ${job.failureReason}</li>`}${job.reasons.map((reason) => html`<li><span class="num">${reason.count}×</span> ${reason.reason}</li>`)}${job.unrecordedFailures > 0 && html`<li class="muted">${job.unrecordedFailures} more without a recorded reason</li>`}</ul></td></tr>`;
  return html`<tr data-job="${job.id}">
<td><code title="${job.id}">${job.id.slice(0, 8)}</code></td><td>${job.kind}</td><td data-field="status"><span class="status ${job.status}">${job.status}</span></td>
<td class="wide">${progressBar(job)}</td>
<td class="num" data-field="done">${job.done}</td><td class="num${job.failed > 0 ? " bad" : ""}" data-field="failed">${job.failed}</td><td class="num" data-field="dispatched">${job.dispatched}</td><td class="num" data-field="total">${job.total}</td>
<td class="num">${job.age}</td><td class="num">${job.lastEpoch ?? "–"}</td>
</tr>${reasons}`;
}

function progressBar(job: JobView): SafeHtml {
  const { done, failed, dispatched } = job.percent;
  return html`<svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label="${job.done} of ${job.total} done, ${job.failed} failed, ${job.dispatched} dispatched"><rect class="track" width="100" height="10"></rect><rect class="dispatched" width="${dispatched}" height="10"></rect><rect class="done" width="${done}" height="10"></rect><rect class="failed" x="${done}" width="${failed}" height="10"></rect></svg><span class="pct">${done}%</span>`;
}

function renderFailures(view: StatusView): SafeHtml {
  const { items, jobsWithFailures, reasons } = view.failures;
  return html`<section id="failures"><h2>Failures</h2>
<p><span class="big${items > 0 ? " bad" : ""}" data-field="failed-items">${items}</span> failed items in ${jobsWithFailures} of the jobs listed above.</p>
${reasons.length > 0 && html`<table><thead><tr><th>Items</th><th>Reason</th></tr></thead><tbody>${reasons.map((reason) => html`<tr><td class="num">${reason.count}</td><td>${reason.reason}</td></tr>`)}</tbody></table>`}
</section>`;
}

function renderPoison(view: StatusView): SafeHtml {
  const rows = view.poison.map(
    (queue) =>
      html`<tr data-queue="${queue.queue}"><td><code>${queue.queue}</code></td><td class="num${queue.depth > 0 ? " bad" : ""}" data-field="depth">${Number.isNaN(queue.depth) ? "unknown" : queue.depth}</td></tr>`,
  );
  return html`<section id="poison"><h2>Poison queues</h2>
<p class="muted">Messages waiting here were given up on. The leader records the items a job claims in the work poison queue as failed on its next step; what stays names no job, for a person to inspect.</p>
<table><thead><tr><th>Queue</th><th>Messages</th></tr></thead><tbody>${rows}</tbody></table>
</section>`;
}

/** Shown only when some kind or job has limits: each pool's use against its limit, and what waits for it. */
function renderLimits(view: StatusView): SafeHtml | undefined {
  if (view.limits.length === 0) return undefined;
  const rows = view.limits.map((pool) => {
    const { concurrency, rate } = pool;
    const full =
      (concurrency !== undefined && concurrency.running >= concurrency.limit) ||
      (rate !== undefined && rate.permitsInUse >= rate.burst);
    return html`<tr data-pool="${pool.pool}"><td><code>${pool.pool}</code></td><td class="num" data-field="running">${concurrency === undefined ? "—" : `${concurrency.running} of ${concurrency.limit}`}</td><td class="num" data-field="rate">${rate === undefined ? "—" : `${rate.permitsInUse} of ${rate.burst} permits (${rate.limit} per ${rate.periodSeconds} s)`}</td><td class="num" data-field="starts">${rate === undefined ? "—" : rate.reportedStarts}</td><td class="num${full && pool.waitingItems > 0 ? " bad" : ""}" data-field="waiting">${pool.waitingItems}</td></tr>`;
  });
  return html`<section id="limits"><h2>Limits</h2>
<p class="muted">Every limit holds across all instances: the leader hands each work unit a share of each limit it counts against, written down before the unit is sent. Running counts the shares held (items that may be running); starts, what finished units reported in the last period; waiting, the items of jobs that waited for the pool in the last minute.</p>
<table><thead><tr><th>Pool</th><th>Running</th><th>Rate</th><th>Starts in the last period</th><th>Waiting</th></tr></thead><tbody>${rows}</tbody></table>
</section>`;
}

/** Shown only when an ended job's removal failed: which, how often, when it is tried again, and why. */
function renderRetention(view: StatusView): SafeHtml | undefined {
  const { failures, more } = view.retention;
  if (failures.length === 0) return undefined;
  const rows = failures.map(
    (job) =>
      html`<tr data-removal-of="${job.id}"><td><code title="${job.id}">${job.id.slice(0, 8)}</code></td><td><time datetime="${job.endedAt}">${job.endedAt}</time></td><td class="num">${job.attempts}</td><td><time datetime="${job.retryAt}">${job.retryAt}</time></td><td>${job.error ?? ""}</td></tr>`,
  );
  return html`<section id="retention" class="problems"><h2>Retention</h2>
<p>Ended jobs past <code>JOB_RETENTION_HOURS</code> that could not be removed (a blob storage will not delete: a legal hold, an immutability policy). Each stays readable and is tried again later; the other jobs go on.</p>
<table><thead><tr><th>Job</th><th>Ended</th><th>Attempts</th><th>Next try</th><th>Last error</th></tr></thead><tbody>${rows}</tbody></table>
${more && html`<p class="muted">and more.</p>`}
</section>`;
}

const STYLE = html`
:root { color-scheme: light dark; --fg: #1d2430; --muted: #667085; --bg: #ffffff; --panel: #f5f7fa; --line: #d9dee7; --good: #2e9d57; --bad: #d1453b; --busy: #9db8e8; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ef; --muted: #98a2b3; --bg: #12161d; --panel: #1b212b; --line: #2c3542; --busy: #35507f; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 1200px; margin: 0 auto; padding: 16px 24px 40px; }
h1 { font-size: 22px; margin: 0 0 2px; } h2 { font-size: 17px; margin: 0 0 8px; } h3 { font-size: 14px; margin: 14px 0 6px; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin: 14px 0; }
.muted { color: var(--muted); } .big { font-size: 18px; } .bad { color: var(--bad); font-weight: 600; }
.holder { font-weight: 600; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0 0; } .facts dt { color: var(--muted); } .facts dd { margin: 0; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { font-weight: 600; color: var(--muted); } .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.wide { width: 30%; white-space: nowrap; } .pct { font-variant-numeric: tabular-nums; margin-left: 6px; color: var(--muted); }
tr.reasons td { border-bottom: 1px solid var(--line); padding-top: 0; } tr.reasons ul { margin: 0; padding-left: 18px; }
.status { padding: 1px 8px; border-radius: 10px; background: var(--line); } .status.completed { background: var(--good); color: #fff; } .status.running { background: var(--busy); } .status.scheduled { background: var(--line); font-style: italic; } .status.failed { background: var(--bad); color: #fff; }
svg.bar { width: calc(100% - 60px); height: 12px; vertical-align: middle; border-radius: 3px; }
svg.bar .track { fill: var(--line); } svg.bar .dispatched { fill: var(--busy); } svg.bar .done { fill: var(--good); } svg.bar .failed { fill: var(--bad); }
svg.timeline { width: 100%; height: auto; display: block; }
svg.timeline .lane { fill: var(--bg); } svg.timeline .lane-label { fill: var(--muted); font-size: 12px; }
svg.timeline .epoch { font-size: 11px; fill: var(--fg); } svg.timeline .axis { font-size: 11px; fill: var(--muted); }
svg.timeline .current, svg.timeline .span { opacity: 0.35; }
.h0 { --c: #3b7dd8; } .h1 { --c: #e08a1e; } .h2 { --c: #2e9d57; } .h3 { --c: #b04fc2; } .h4 { --c: #d1453b; } .h5 { --c: #1a9aa0; } .h6 { --c: #8a6d3b; } .h7 { --c: #6b7a90; }
svg.timeline .mark, svg.timeline .current, svg.timeline .span { fill: var(--c); }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; background: var(--c); }
.problems { border-color: var(--bad); } #refresh-state { margin: 0; padding: 6px 24px; background: var(--bad); color: #fff; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
`;

/**
 * Refreshes the page in place every `data-refresh-ms`: fetches the same URL (so `?code=` goes along), swaps in the new
 * `<main>` and title, and counts refreshes in `data-refreshes`. A failed refresh is shown in a banner, not thrown (no
 * console error), and retried. Skipped while the tab is hidden.
 */
const REFRESH_SCRIPT = html`
(() => {
  const every = Number(document.body.dataset.refreshMs) || 5000;
  const banner = document.getElementById("refresh-state");
  const refresh = async () => {
    if (document.visibilityState !== "hidden") {
      try {
        const response = await fetch(location.href, { cache: "no-store", headers: { accept: "text/html" } });
        if (!response.ok) throw new Error("the server answered " + response.status);
        // Only main is taken, through an inert template: the answer's own style and script elements carry a new nonce
        // that this document's CSP would (rightly) refuse.
        const text = await response.text();
        const start = text.indexOf("<main");
        const end = text.lastIndexOf("</main>");
        if (start < 0 || end < start) throw new Error("the answer is not a status page");
        const template = document.createElement("template");
        template.innerHTML = text.slice(start, end + "</main>".length);
        const main = template.content.querySelector("main");
        document.querySelector("main").replaceWith(main);
        document.title = main.dataset.title;
        document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes) + 1);
        banner.hidden = true;
      } catch (error) {
        banner.textContent = "Could not refresh (" + (error instanceof Error ? error.message : String(error)) + " at " + new Date().toISOString() + "); still trying.";
        banner.hidden = false;
      }
    }
    setTimeout(refresh, every);
  };
  setTimeout(refresh, every);
})();
`;
