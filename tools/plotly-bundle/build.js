// Builds the plotly.js bundle the dashboard serves from dashboard/assets/ (see README.md here).
//
//   cd tools/plotly-bundle && npm ci && npm run build
//
// plotly.js's "custom bundle" (its CUSTOM_BUNDLE.md): the core (scatter, every component) plus the
// trace types below, built with the esbuild settings plotly.js uses for its own dist files. It is
// emitted as one parenthesised function called at once, which V8 compiles in a single pass; the dist
// files wrap the code in a UMD factory that V8 first pre-parses lazily and then parses again when it
// is called: 540 ms vs 133 ms of script evaluation on a first visit (2-core machine).
'use strict';

const fs = require('fs');
const path = require('path');
const esbuild = require('esbuild');
const { environmentPlugin } = require('esbuild-plugin-environment');
const InlineCSSPlugin = require('esbuild-plugin-inline-css');

// Every trace type a figure of the dashboard uses (tests/exports/test_page_export.py checks this
// against the charts of every page); scatter comes with the core.
const TRACES = ['bar', 'box', 'heatmap', 'histogram', 'scatter'];

const ASSETS = path.resolve(__dirname, '..', '..', 'dashboard', 'assets');
const version = require('plotly.js/package.json').version;
const entry = path.join(__dirname, 'entry.generated.js');
const registered = TRACES.filter((trace) => trace !== 'scatter');

fs.writeFileSync(entry, [
    "'use strict';",
    "var Plotly = require('plotly.js/lib/core');",
    `Plotly.register([${registered.map((trace) => `require('plotly.js/lib/${trace}')`).join(', ')}]);`,
    'module.exports = Plotly;',
    '',
].join('\n'));

// V8's explicit compile hint (first line of the file): compile every function with the script, so the
// code cache Chrome keeps for a returning visitor holds them all. Without it plotly's drawing code,
// first called after the page's layout arrives, is compiled again on every page load (a page's first
// chart took 73 ms instead of 37 on a warm visit, 2 cores; a first visit costs the same either way).
const banner = [
    '//# allFunctionsCalledOnLoad',
    '/**',
    `* plotly.js (dashboard: ${TRACES.join(', ')} - minified) v${version}`,
    '* Copyright 2012-2026, Plotly, Inc.',
    '* All rights reserved.',
    '* Licensed under the MIT license',
    '* Built by tools/plotly-bundle/build.js: the plotly.js core with the trace types named above.',
    '*/',
].join('\n');

for (const old of fs.readdirSync(ASSETS).filter((name) => /^plotly-.*\.min\.js$/.test(name))) {
    fs.unlinkSync(path.join(ASSETS, old));
}

esbuild.build({
    entryPoints: [entry],
    outfile: path.join(ASSETS, `plotly-dashboard-${version}.min.js`),
    format: 'iife',
    globalName: 'Plotly',
    bundle: true,
    minify: true,
    sourcemap: false,
    legalComments: 'eof',
    banner: { js: banner },
    footer: { js: 'window.Plotly = Plotly;' },
    plugins: [InlineCSSPlugin(), environmentPlugin({ NODE_DEBUG: false })],
    alias: { stream: 'stream-browserify' },
    define: { global: 'window', 'define.amd': 'false' },
    target: 'es2016',
    logLevel: 'info',
}).finally(() => fs.unlinkSync(entry)).catch(() => process.exit(1));
