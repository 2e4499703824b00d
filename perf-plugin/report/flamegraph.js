// The flame graph's interaction, embedded in the SVG by report/flamegraph_svg.cpp: hover for
// details, click to zoom, Ctrl-F or "Search" to highlight matches, reset. Plain JavaScript
// that works in the SVG document itself and in an HTML page the SVG is inlined into.
//
// Frames are nested <g class="f"> elements, a frame's children inside it, each with
// data-name, data-value (ns) and data-kind, and its own <title>, <rect> and <text>.
// Positions are computed from the values, which are exact, not from the rounded pixels; a
// frame's data-skip is the time of narrower siblings before it that were not drawn.
//
// Entry points for tests and scripts: window.offwakeZoom(element), window.offwakeReset(),
// window.offwakeSearch(term) (returns the matched share in percent; '' or null clears).
// State is mirrored into attributes of the <svg>: data-zoomed-name, data-zoomed-value,
// data-search-term, data-search-value (ns) and data-search-share (percent).
(function () {
  'use strict';
  var script = document.currentScript;
  var svg = (script && script.ownerSVGElement) || document.documentElement;
  var NS = 'http://www.w3.org/2000/svg';
  var X0 = +svg.getAttribute('data-graph-x');
  var W = +svg.getAttribute('data-graph-width');
  var TOTAL = +svg.getAttribute('data-total');
  var CHAR_W = +svg.getAttribute('data-char-width');
  var VALUE_NAME = svg.getAttribute('data-value-name') || '';
  var framesRoot = svg.querySelector('#frames');
  var details = svg.querySelector('#details');
  var resetControl = svg.querySelector('#reset-zoom');
  var searchControl = svg.querySelector('#search');
  var clearControl = svg.querySelector('#clear-search');
  var matchedText = svg.querySelector('#matched');
  var idleDetails = details ? details.textContent : '';

  function isFrame(el) {
    return !!el && el.nodeType === 1 && el.classList.contains('f');
  }
  function frameOf(el) {
    for (; el && el !== svg; el = el.parentNode) if (isFrame(el)) return el;
    return null;
  }
  function inside(el, ancestor) {
    for (; el && ancestor; el = el.parentNode) if (el === ancestor) return true;
    return false;
  }
  function childFrames(g) {
    var out = [];
    for (var c = g.firstElementChild; c; c = c.nextElementSibling) if (isFrame(c)) out.push(c);
    return out;
  }
  function ownChild(g, tag) {
    for (var c = g.firstElementChild; c; c = c.nextElementSibling) if (c.localName === tag) return c;
    return null;
  }

  function human(ns) {
    if (ns < 1e3) return ns + ' ns';
    if (ns < 1e6) return (ns / 1e3).toFixed(2) + ' us';
    if (ns < 1e9) return (ns / 1e6).toFixed(2) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }
  function percent(ns) {
    return (TOTAL ? (100 * ns) / TOTAL : 0).toFixed(2) + '%';
  }

  // Every frame's start (ns from the left edge of the whole graph) and value, once.
  var laidOut = false;
  function layout() {
    if (laidOut || !framesRoot) return;
    laidOut = true;
    var todo = [[framesRoot, 0]];
    while (todo.length) {
      var item = todo.pop(), at = item[1], kids = childFrames(item[0]);
      for (var i = 0; i < kids.length; i++) {
        var k = kids[i];
        at += +(k.getAttribute('data-skip') || 0);
        k._start = at;
        k._value = +k.getAttribute('data-value');
        at += k._value;
        todo.push([k, k._start]);
      }
    }
  }

  function round(v) {
    return String(Math.round(v * 10) / 10);
  }
  function fit(name, w) {
    var n = Math.floor((w - 6) / CHAR_W);
    if (n >= name.length) return name;
    return n >= 3 ? name.slice(0, n - 2) + '..' : '';
  }
  // Moves a frame and fits its label, making a <text> if the frame had none (too narrow).
  function place(g, x, w) {
    var rect = ownChild(g, 'rect'), text = ownChild(g, 'text');
    rect.setAttribute('x', round(x));
    rect.setAttribute('width', round(w));
    var label = fit(g.getAttribute('data-name'), w);
    if (!text) {
      if (!label) return;
      text = document.createElementNS(NS, 'text');
      text.setAttribute('y', String(+rect.getAttribute('y') + 12));
      g.insertBefore(text, rect.nextSibling);
    }
    text.setAttribute('x', round(x + 3));
    text.textContent = label;
  }

  // Zoom: what the current zoom hid and moved, undone by restore().
  var hidden = [], moved = [];
  function restore() {
    for (var i = 0; i < hidden.length; i++) hidden[i].classList.remove('h');
    for (var j = 0; j < moved.length; j++) {
      var m = moved[j];
      place(m, X0 + (m._start * W) / TOTAL, (m._value * W) / TOTAL);
    }
    hidden = [];
    moved = [];
  }

  // The frame becomes full width with everything above it scaled alike; its ancestors stay,
  // full width; every other frame is hidden.
  function zoom(el) {
    var g = frameOf(el);
    if (!g || !framesRoot || !inside(g, framesRoot)) return false;
    layout();
    restore();
    for (var c = g; c !== framesRoot; c = c.parentNode) {
      var siblings = childFrames(c.parentNode);
      for (var i = 0; i < siblings.length; i++) {
        if (siblings[i] === c) continue;
        siblings[i].classList.add('h');
        hidden.push(siblings[i]);
      }
      if (c !== g) {
        place(c, X0, W);
        moved.push(c);
      }
    }
    var scale = W / g._value;
    var above = [g].concat(Array.prototype.slice.call(g.querySelectorAll('g.f')));
    for (var j = 0; j < above.length; j++) {
      var d = above[j];
      place(d, X0 + (d._start - g._start) * scale, d._value * scale);
      moved.push(d);
    }
    svg.setAttribute('data-zoomed-name', g.getAttribute('data-name'));
    svg.setAttribute('data-zoomed-value', g.getAttribute('data-value'));
    if (resetControl) resetControl.classList.remove('off');
    return true;
  }

  function resetZoom() {
    restore();
    svg.removeAttribute('data-zoomed-name');
    svg.removeAttribute('data-zoomed-value');
    if (resetControl) resetControl.classList.add('off');
  }

  // Search: matching frames are highlighted; the share counts each path once, so a match
  // above another match on the same path adds nothing (its time is already in the lower one).
  var matched = [], lastTerm = '';
  function search(term) {
    for (var i = 0; i < matched.length; i++) matched[i].classList.remove('m');
    matched = [];
    if (term === null || term === undefined || String(term) === '') {
      lastTerm = '';
      svg.removeAttribute('data-search-term');
      svg.removeAttribute('data-search-value');
      svg.removeAttribute('data-search-share');
      if (matchedText) matchedText.textContent = '';
      if (clearControl) clearControl.classList.add('h');
      return null;
    }
    term = String(term);
    lastTerm = term;
    var re;
    try {
      re = new RegExp(term);
    } catch (e) {  // not a regular expression: the text itself
      re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    }
    var sum = 0, todo = framesRoot ? [[framesRoot, false]] : [];
    while (todo.length) {
      var item = todo.pop(), kids = childFrames(item[0]);
      for (var k = 0; k < kids.length; k++) {
        var hit = re.test(kids[k].getAttribute('data-name'));
        if (hit) {
          kids[k].classList.add('m');
          matched.push(kids[k]);
          if (!item[1]) sum += +kids[k].getAttribute('data-value');
        }
        todo.push([kids[k], item[1] || hit]);
      }
    }
    var share = TOTAL ? (100 * sum) / TOTAL : 0;
    svg.setAttribute('data-search-term', term);
    svg.setAttribute('data-search-value', String(sum));
    svg.setAttribute('data-search-share', share.toFixed(6));
    if (matchedText) matchedText.textContent = 'Matched: ' + percent(sum) + ' (' + human(sum) + ')';
    if (clearControl) clearControl.classList.remove('h');
    return share;
  }

  function askSearch() {
    var term = window.prompt('Search frames (regular expression or text):', lastTerm);
    if (term !== null) search(term);
  }

  function describe(g) {
    var v = +g.getAttribute('data-value');
    return g.getAttribute('data-name') + ': ' + VALUE_NAME + ' ' + human(v) + ', ' + percent(v) + ' of the total';
  }

  svg.addEventListener('mouseover', function (e) {
    var g = frameOf(e.target);
    if (g && details) details.textContent = describe(g);
  });
  svg.addEventListener('mouseout', function (e) {
    if (frameOf(e.target) && details) details.textContent = idleDetails;
  });
  svg.addEventListener('click', function (e) {
    var t = e.target;
    if (inside(t, resetControl)) resetZoom();
    else if (inside(t, searchControl)) askSearch();
    else if (inside(t, clearControl)) search('');
    else zoom(t);
  });
  window.addEventListener('keydown', function (e) {
    if ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) {
      e.preventDefault();
      askSearch();
    } else if (e.key === 'Escape' && lastTerm) {
      search('');
    }
  });

  window.offwakeZoom = zoom;
  window.offwakeReset = resetZoom;
  window.offwakeSearch = search;
})();
