import { describe, expect, it } from "vitest";
import { SafeHtml, escapeHtml, html } from "../../src/app/html";

describe("HTML escaping (src/app/html.ts)", () => {
  it("escapes the five characters that matter in text and quoted attributes, and nothing else", () => {
    expect(escapeHtml(`<script>alert("x" & 'y')</script>`)).toBe(
      "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;",
    );
    expect(escapeHtml("plain text, ünïcödé, 1/2 = 0.5")).toBe("plain text, ünïcödé, 1/2 = 0.5");
    expect(escapeHtml("&amp;")).toBe("&amp;amp;"); // text is text: an entity in data is shown, not interpreted
  });

  it("the html tag escapes every interpolated value, in text and in attributes", () => {
    const holder = `"><img src=x onerror=alert(1)>`;
    expect(html`<td title="${holder}">${holder}</td>`.text).toBe(
      '<td title="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;">&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</td>',
    );
  });

  it("inserts markup built by html as is (no double escaping), joins lists, and renders nothing for false, null and undefined", () => {
    const rows = ["a<b", "c&d"].map((text) => html`<li>${text}</li>`);
    const shown = false as boolean;
    expect(html`<ul>${rows}</ul>${shown && html`<p>hidden</p>`}${undefined}${null}${42}`.text).toBe(
      "<ul><li>a&lt;b</li><li>c&amp;d</li></ul>42",
    );
  });

  it("never trusts a plain string that looks like markup; only SafeHtml passes through", () => {
    expect(html`${"<b>bold</b>"}`.text).toBe("&lt;b&gt;bold&lt;/b&gt;");
    expect(html`${new SafeHtml("<b>bold</b>")}`.text).toBe("<b>bold</b>");
    expect(String(html`<i>${"x"}</i>`)).toBe("<i>x</i>");
  });
});
