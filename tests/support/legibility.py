"""What a reader sees of a page's charts, measured in the browser from DOM bounding boxes.

`LEGIBILITY_JS(selector)` returns, for every plotly chart inside `selector`, the problems a reader would see:

- a chart title, axis title, tick label, legend entry or annotation whose box overlaps another's by more than
  a pixel each way (ticks of one axis are allowed to touch at their ends only);
- one of them clipped: reaching out of the chart's own SVG, or out of the page's width;
- a category tick (a kernel label) drawn on more than two lines.

Each problem is one line naming the chart and both texts; an empty list means the page reads. The counts of
what was measured come back too, so a test can tell "nothing wrong" from "nothing drawn".
"""

from __future__ import annotations

from typing import Any

LEGIBILITY_JS = r"""(selector) => {
    const problems = [];
    const counts = {charts: 0, texts: 0};
    const pageWidth = document.documentElement.clientWidth;
    const visible = (element) => {
        const style = getComputedStyle(element);
        if (style.display === 'none' || style.visibility === 'hidden' || Number(style.opacity) === 0) return false;
        for (let node = element; node; node = node.parentElement) {
            if (getComputedStyle(node).display === 'none') return false;
        }
        return true;
    };
    for (const plot of document.querySelectorAll(selector + ' .js-plotly-plot')) {
        if (!visible(plot)) continue;
        const svg = plot.querySelector('.main-svg');
        if (!svg) continue;
        counts.charts += 1;
        const frame = svg.getBoundingClientRect();
        const name = (plot.closest('[id]') || {}).id || '?';
        const items = [];
        const add = (element, kind) => {
            const text = element.textContent.trim();
            if (!text || !visible(element)) return;
            const box = element.getBoundingClientRect();
            if (box.width === 0 || box.height === 0) return;
            const lines = element.querySelectorAll('tspan.line').length || 1;
            const turned = /rotate\((-?[\d.]+)/.exec(element.getAttribute('transform') || '');
            items.push({kind, text, lines, l: box.left, r: box.right, t: box.top, b: box.bottom,
                        angle: turned ? Number(turned[1]) : 0, size: parseFloat(getComputedStyle(element).fontSize),
                        x: (box.left + box.right) / 2, y: (box.top + box.bottom) / 2,
                        axis: kind === 'tick' ? element.parentElement.getAttribute('class') : kind + items.length});
        };
        plot.querySelectorAll('.gtitle').forEach(e => add(e, 'title'));
        plot.querySelectorAll('[class*="title"]').forEach(e => {
            const cls = e.getAttribute('class') || '';
            if (/^[xy]\d*title$/.test(cls) || cls === 'cbtitle' || /colorbar.*title/.test(cls)) add(e, 'axis title');
        });
        plot.querySelectorAll('g[class$="tick"] > text').forEach(e => add(e, 'tick'));
        plot.querySelectorAll('.legendtext').forEach(e => add(e, 'legend'));
        plot.querySelectorAll('g.annotation-text-g text').forEach(e => add(e, 'annotation'));
        counts.texts += items.length;
        for (const item of items) {
            const clipped = item.l < frame.left - 1 || item.r > frame.right + 1 || item.t < frame.top - 1
                || item.b > frame.bottom + 1 || item.l < -1 || item.r > pageWidth + 1;
            if (clipped) problems.push(`${name}: ${item.kind} "${item.text}" is clipped`);
            if (item.kind === 'tick' && item.lines > 2) {
                problems.push(`${name}: tick "${item.text}" takes ${item.lines} lines`);
            }
        }
        for (let i = 0; i < items.length; i++) for (let j = i + 1; j < items.length; j++) {
            const a = items[i], b = items[j];
            if (a.angle && a.angle === b.angle) {
                // Two turned labels: their boxes are wide diagonals and may cross while the texts do not.
                // They clash when their baselines are closer than a line and their spans along them meet.
                const radians = a.angle * Math.PI / 180, dx = b.x - a.x, dy = b.y - a.y;
                const apart = Math.abs(dx * Math.sin(radians) - dy * Math.cos(radians));
                const along = Math.abs(dx * Math.cos(radians) + dy * Math.sin(radians));
                const length = (box) => Math.hypot(box.r - box.l, box.b - box.t);
                if (apart < 0.85 * Math.min(a.size, b.size) && along < (length(a) + length(b)) / 2) {
                    problems.push(`${name}: ${a.kind} "${a.text}" overlaps ${b.kind} "${b.text}"`);
                }
                continue;
            }
            const across = Math.min(a.r, b.r) - Math.max(a.l, b.l), down = Math.min(a.b, b.b) - Math.max(a.t, b.t);
            if (across > 1 && down > 1) {
                problems.push(`${name}: ${a.kind} "${a.text}" overlaps ${b.kind} "${b.text}"`);
            }
        }
    }
    return {problems, counts};
}"""


def legibility(page: Any, selector: str = "#_pages_content") -> tuple[list[str], dict[str, int]]:
    """(problems, counts) of the charts under `selector` on `page` (a Playwright page)."""
    found = page.evaluate(LEGIBILITY_JS, selector)
    return found["problems"], found["counts"]
