// SVG charts drawn by hand: no library, no network, every label set as text (never as
// markup), so a hostile case name or model answer cannot become part of the page.

const NS = "http://www.w3.org/2000/svg";

/** An SVG element with attributes; `text` becomes a text node, never markup. */
export function svgEl(tag, attrs = {}, text) {
  const el = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) el.setAttribute(key, String(value));
  }
  if (text !== undefined && text !== null) el.textContent = String(text);
  return el;
}

function tip(el, text) {
  if (text) el.appendChild(svgEl("title", {}, text));
  return el;
}

/** Round numbers for axis ticks: 0, 0.25, 0.5 ... or 0, 20, 40 ... */
export function niceTicks(min, max, count = 5) {
  if (!(max > min)) max = min + 1;
  const raw = (max - min) / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const ticks = [];
  for (let v = Math.floor(min / step) * step; v <= max + step * 1e-9; v += step) {
    ticks.push(Number(v.toFixed(10)));
  }
  return ticks;
}

/**
 * A line chart of categorical x values (days, runs) evenly spaced: one `circle.pt` per
 * point with a value, a <title> tooltip on each, and an error bar where a point carries
 * `low` and `high` (an interval).
 *
 * points: [{x: "2026-11-27", y: 0.83 | null, low?, high?, tip?}]
 */
export function lineChart({
  points,
  yMin = 0,
  yMax,
  yFormat = (v) => String(v),
  xLabel = "",
  yLabel = "",
  label = "chart",
  width = 640,
  height = 240,
}) {
  const pad = { left: 56, right: 18, top: 16, bottom: 48 };
  const values = points.flatMap((p) => [p.y, p.high]).filter((v) => typeof v === "number");
  const top = yMax ?? Math.max(1, ...values);
  const ticks = niceTicks(yMin, top);
  const hi = Math.max(top, ticks[ticks.length - 1]);
  const svg = svgEl("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "chart line-chart",
    role: "img",
    "aria-label": label,
  });
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const x = (i) => pad.left + (points.length <= 1 ? plotW / 2 : (i * plotW) / (points.length - 1));
  const y = (v) => pad.top + plotH - ((v - yMin) / (hi - yMin || 1)) * plotH;

  const grid = svgEl("g", { class: "grid" });
  for (const t of ticks) {
    grid.appendChild(svgEl("line", { x1: pad.left, x2: width - pad.right, y1: y(t), y2: y(t) }));
    grid.appendChild(
      svgEl("text", { x: pad.left - 8, y: y(t) + 4, "text-anchor": "end", class: "tick" }, yFormat(t)),
    );
  }
  svg.appendChild(grid);
  const axes = svgEl("g", { class: "axis" });
  axes.appendChild(svgEl("line", { x1: pad.left, x2: pad.left, y1: pad.top, y2: pad.top + plotH }));
  axes.appendChild(
    svgEl("line", { x1: pad.left, x2: width - pad.right, y1: pad.top + plotH, y2: pad.top + plotH }),
  );
  const every = Math.max(1, Math.ceil(points.length / 8));
  points.forEach((p, i) => {
    if (i % every !== 0 && i !== points.length - 1) return;
    axes.appendChild(svgEl("line", { x1: x(i), x2: x(i), y1: pad.top + plotH, y2: pad.top + plotH + 4 }));
    axes.appendChild(
      svgEl("text", { x: x(i), y: pad.top + plotH + 18, "text-anchor": "middle", class: "tick" }, p.x),
    );
  });
  if (xLabel) {
    axes.appendChild(
      svgEl("text", { x: pad.left + plotW / 2, y: height - 6, "text-anchor": "middle", class: "axis-label" }, xLabel),
    );
  }
  if (yLabel) {
    axes.appendChild(
      svgEl(
        "text",
        { x: 14, y: pad.top + plotH / 2, "text-anchor": "middle", class: "axis-label", transform: `rotate(-90 14 ${pad.top + plotH / 2})` },
        yLabel,
      ),
    );
  }
  svg.appendChild(axes);

  const drawn = points.map((p, i) => ({ ...p, i })).filter((p) => typeof p.y === "number");
  if (drawn.length > 1) {
    const d = drawn.map((p, k) => `${k ? "L" : "M"}${x(p.i).toFixed(1)},${y(p.y).toFixed(1)}`).join(" ");
    svg.appendChild(svgEl("path", { d, class: "series" }));
  }
  const marks = svgEl("g", { class: "points" });
  for (const p of drawn) {
    if (typeof p.low === "number" && typeof p.high === "number") {
      const bar = svgEl("g", { class: "interval" });
      bar.appendChild(svgEl("line", { x1: x(p.i), x2: x(p.i), y1: y(p.low), y2: y(p.high) }));
      bar.appendChild(svgEl("line", { x1: x(p.i) - 4, x2: x(p.i) + 4, y1: y(p.low), y2: y(p.low) }));
      bar.appendChild(svgEl("line", { x1: x(p.i) - 4, x2: x(p.i) + 4, y1: y(p.high), y2: y(p.high) }));
      marks.appendChild(tip(bar, p.tip || `${p.x}: ${yFormat(p.low)} – ${yFormat(p.high)}`));
    }
    const dot = svgEl("circle", { cx: x(p.i), cy: y(p.y), r: 4, class: "pt", "data-value": p.y });
    marks.appendChild(tip(dot, p.tip || `${p.x}: ${yFormat(p.y)}`));
  }
  svg.appendChild(marks);
  return svg;
}

/**
 * Horizontal bars, one `rect.bar` per item, labelled on the left and valued on the right.
 * items: [{label, value, tag?: "control"|"winner"|..., tip?}]
 */
export function barChart({ items, format = (v) => String(v), label = "chart", width = 480 }) {
  const rowH = 30;
  const pad = { left: 130, right: 86, top: 8, bottom: 8 };
  const height = pad.top + pad.bottom + rowH * Math.max(1, items.length);
  const max = Math.max(0, ...items.map((it) => (typeof it.value === "number" ? it.value : 0)));
  const svg = svgEl("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "chart bar-chart",
    role: "img",
    "aria-label": label,
  });
  const plotW = width - pad.left - pad.right;
  items.forEach((it, i) => {
    const y = pad.top + i * rowH;
    const g = svgEl("g", { class: `bar-row ${it.tags ? it.tags.join(" ") : ""}`.trim() });
    const name = it.label.length > 18 ? `${it.label.slice(0, 17)}…` : it.label;
    g.appendChild(svgEl("text", { x: pad.left - 8, y: y + rowH / 2 + 4, "text-anchor": "end", class: "bar-label" }, name));
    const has = typeof it.value === "number";
    const w = has && max > 0 ? Math.max(2, (it.value / max) * plotW) : has ? 2 : 0;
    g.appendChild(svgEl("rect", { x: pad.left, y: y + 5, width: w, height: rowH - 10, rx: 3, class: "bar", "data-value": has ? it.value : "" }));
    g.appendChild(
      svgEl("text", { x: pad.left + w + 6, y: y + rowH / 2 + 4, class: "bar-value" }, has ? format(it.value) : "—"),
    );
    svg.appendChild(tip(g, it.tip || `${it.label}: ${has ? format(it.value) : "no data"}`));
  });
  return svg;
}

/** A thin progress/score meter (0..1) as an SVG, for table cells. */
export function meter(fraction, { label = "", width = 90 } = {}) {
  const f = Math.max(0, Math.min(1, Number(fraction) || 0));
  const svg = svgEl("svg", { viewBox: `0 0 ${width} 8`, class: "meter", width, height: 8, role: "img", "aria-label": label });
  svg.appendChild(svgEl("rect", { x: 0, y: 0, width, height: 8, rx: 4, class: "meter-bg" }));
  svg.appendChild(svgEl("rect", { x: 0, y: 0, width: f * width, height: 8, rx: 4, class: "meter-fg" }));
  return tip(svg, label);
}
