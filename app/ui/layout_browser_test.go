package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// A view is a window size and color scheme the issue-20 browser tests
// check their screens at.
type view struct {
	name          string
	width, height int64
	scheme        string // prefers-color-scheme: light or dark
}

func (v view) phone() bool { return v.width < 600 }

var (
	desktopLight = view{"desktop-light", 1280, 800, "light"}
	desktopDark  = view{"desktop-dark", 1280, 800, "dark"}
	phoneLight   = view{"phone-light", 390, 844, "light"}
	phoneDark    = view{"phone-dark", 390, 844, "dark"}
	// everyView is the sizes and themes of a visual item.
	everyView = []view{desktopLight, desktopDark, phoneLight, phoneDark}
	// bothSizes is the sizes of an item whose looks are not the point.
	bothSizes = []view{desktopLight, phoneDark}
)

// Floors the layout checks hold every checked element to.
const (
	minContrast     = 4.5 // WCAG AA, text under 24 px (18.66 px bold)
	minContrastBig  = 3.0 // WCAG AA, larger text
	minPhoneTarget  = 32  // CSS px, the smaller side of a control on a phone
	defaultDesktopH = 860 // the suite's usual window
)

// at switches the window to v, with reduced motion, so nothing is
// half-way through a transition when it is measured.
func (b *browser) at(v view) {
	b.t.Helper()
	b.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v.scheme}, {Name: "prefers-reduced-motion", Value: "reduce"}},
		})
		return err
	}))
	if v.phone() {
		b.do(chromedp.EmulateViewport(v.width, v.height, chromedp.EmulateScale(2)))
	} else {
		b.do(chromedp.EmulateViewport(v.width, v.height))
	}
}

// desktop puts the window back to the suite's usual size, light.
func (b *browser) desktop() {
	b.t.Helper()
	b.scheme("light")
	b.do(chromedp.EmulateViewport(1280, defaultDesktopH))
}

// jsLayoutProblems lists what is wrong with the elements of each selector
// (the first match): not rendered; not fully inside the window once
// scrolled into view; covered by another element at its center; text
// (its own, or its first text's) below the contrast floor against the
// background it is painted on; on a phone, a control smaller than the
// touch target floor.
const jsLayoutProblems = `(({sels, phone, minContrast, minContrastBig, minTarget}) => {
	const out = [];
	const rgba = (c) => { const m = c.match(/[\d.]+/g) || ['0','0','0','0']; return m.map(Number).concat(m.length < 4 ? [1] : []).slice(0, 4); };
	const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
	const over = (top, under) => { const a = top[3]; return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat([1]); };
	const background = (el) => {
		const layers = [];
		for (let e = el; e; e = e.parentElement) {
			const c = rgba(getComputedStyle(e).backgroundColor);
			if (c[3] > 0) layers.push(c);
			if (c[3] >= 1) break;
		}
		let bg = rgba(getComputedStyle(document.body).backgroundColor);
		if (bg[3] < 1) bg = over(bg, [255, 255, 255, 1]);
		for (const c of layers.reverse()) bg = over(c, bg);
		return bg;
	};
	const textOf = (el) => {
		if ((el.value || el.placeholder) && /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName)) return el;
		const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT, { acceptNode: (t) => t.data.trim() ? 1 : 3 });
		const t = w.nextNode();
		return t ? t.parentElement : null;
	};
	for (const sel of sels) {
		const el = document.querySelector(sel);
		if (!el) { out.push(sel + ': missing'); continue; }
		el.scrollIntoView({ block: 'nearest', inline: 'nearest' });
		const r = el.getBoundingClientRect();
		const cs = getComputedStyle(el);
		if (r.width < 1 || r.height < 1 || cs.visibility === 'hidden' || Number(cs.opacity) === 0) { out.push(sel + ': not visible'); continue; }
		if (r.left < -1 || r.top < -1 || r.right > innerWidth + 1 || r.bottom > innerHeight + 1) {
			out.push(sel + ': clipped (' + [r.left, r.top, r.right, r.bottom].map(Math.round) + ' in ' + innerWidth + 'x' + innerHeight + ')');
		}
		const hit = document.elementFromPoint(Math.min(innerWidth - 1, Math.max(0, r.left + r.width / 2)), Math.min(innerHeight - 1, Math.max(0, r.top + r.height / 2)));
		if (!hit || !(el === hit || el.contains(hit))) out.push(sel + ': covered by ' + (hit ? hit.tagName.toLowerCase() + '.' + [...hit.classList].join('.') : 'nothing'));
		const t = textOf(el);
		if (t && !el.disabled && !el.closest('[disabled], [aria-disabled="true"]')) {
			const ts = getComputedStyle(t);
			const bg = background(t);
			const fg = over(rgba(ts.color), bg);
			const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
			const ratio = (a + 0.05) / (b + 0.05);
			const size = parseFloat(ts.fontSize), bold = Number(ts.fontWeight) >= 700;
			const floor = size >= 24 || (bold && size >= 18.66) ? minContrastBig : minContrast;
			if (ratio < floor) out.push(sel + ': contrast ' + ratio.toFixed(2) + ' < ' + floor + ' (' + ts.color + ' on rgb(' + bg.slice(0, 3).map(Math.round) + '))');
		}
		if (phone && el.matches('button, a[href], input, select, textarea, summary, [role="button"]') && Math.min(r.width, r.height) < minTarget) {
			out.push(sel + ': touch target ' + Math.round(r.width) + 'x' + Math.round(r.height) + ' < ' + minTarget);
		}
	}
	return out;
})`

// checkLayout requires the elements of sels to be laid out well at the
// current window (see jsLayoutProblems); v names it in the message.
func (b *browser) checkLayout(v view, sels ...string) {
	b.t.Helper()
	arg, err := json.Marshal(map[string]any{
		"sels": sels, "phone": v.phone(), "minContrast": minContrast, "minContrastBig": minContrastBig, "minTarget": minPhoneTarget,
	})
	require.NoError(b.t, err)
	problems := eval[[]string](b, jsLayoutProblems+`(`+string(arg)+`)`)
	if len(problems) > 0 {
		b.shot("layout-" + strings.ReplaceAll(b.t.Name(), "/", "-") + "-" + v.name)
	}
	require.Empty(b.t, problems, "layout at %s", v.name)
}

// checkViews checks sels at each of views (then back to the usual
// desktop), with a screenshot named shot-<view> at each.
func (b *browser) checkViews(views []view, shot string, sels ...string) {
	b.t.Helper()
	for _, v := range views {
		b.at(v)
		b.checkLayout(v, sels...)
		if shot != "" {
			b.shot(fmt.Sprintf("%s-%s", shot, v.name))
		}
	}
	b.desktop()
}

// The layout checks find what they are for: an element off-screen, one
// covered by another, grey text on white, a small control on a phone.
func browserLayoutChecks(t *testing.T, b *browser) {
	b.do(chromedp.Navigate(b.base + "/"))
	b.waitJS("a page", `document.body`)
	// Styles through the CSSOM: the page's CSP refuses style attributes.
	eval[chromedp.Void](b, `(() => {
		const add = (parent, tag, id, css, text) => {
			const el = document.createElement(tag);
			if (id) el.id = id;
			el.style.cssText = css;
			el.textContent = text || '';
			parent.append(el);
			return el;
		};
		document.body.replaceChildren();
		const root = add(document.body, 'div', '', 'background:#fff;color:#000;position:fixed;inset:0');
		add(root, 'p', 'ok', 'font-size:16px', 'readable');
		add(root, 'p', 'faint', 'color:#bbb;font-size:16px', 'faint');
		add(root, 'p', 'big-faint', 'color:#888;font-size:28px', 'big');
		add(root, 'p', 'off', 'position:fixed;left:-200px;top:10px;width:100px;margin:0', 'off-screen');
		add(root, 'p', 'under', 'position:fixed;left:10px;top:300px;width:100px;height:40px;margin:0', 'under');
		add(root, 'div', 'cover', 'position:fixed;left:0;top:290px;width:200px;height:80px;background:#fff');
		add(root, 'button', 'tiny', 'position:fixed;left:10px;top:400px;width:20px;height:20px;min-height:0;padding:0;color:#000;background:#fff', 'x');
		add(root, 'p', 'gone', 'display:none', 'gone');
	})()`)
	problems := func(v view, sels ...string) []string {
		arg, err := json.Marshal(map[string]any{"sels": sels, "phone": v.phone(), "minContrast": minContrast, "minContrastBig": minContrastBig, "minTarget": minPhoneTarget})
		require.NoError(t, err)
		return eval[[]string](b, jsLayoutProblems+`(`+string(arg)+`)`)
	}
	b.at(phoneLight)
	require.Empty(t, problems(phoneLight, "#ok", "#big-faint"))
	for sel, want := range map[string]string{
		"#faint": "#faint: contrast 1.",
		"#off":   "#off: clipped",
		"#under": "#under: covered by div",
		"#tiny":  "#tiny: touch target ",
		"#gone":  "#gone: not visible",
		"#none":  "#none: missing",
	} {
		got := problems(phoneLight, sel)
		require.NotEmpty(t, got, sel)
		require.True(t, strings.HasPrefix(got[0], want), "%s: %s", sel, got[0])
	}
	require.Empty(t, problems(desktopLight, "#tiny"), "the touch target floor is for phones")
	b.desktop()
}
