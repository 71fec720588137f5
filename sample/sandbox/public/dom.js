// @ts-check
// Small DOM helpers shared by every part of the page.

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * The page's element with this id, checked to be of the expected kind, so a renamed element
 * fails loudly at start-up instead of as `undefined` later.
 * @template {Element} T
 * @param {string} id
 * @param {{ new (): T }} kind
 * @returns {T}
 */
export function byId(id, kind) {
  const node = document.getElementById(id);
  if (!(node instanceof kind)) throw new Error(`The page has no ${kind.name} #${id}`);
  return node;
}

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string>} [attributes]
 * @param {...(Node | string)} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/**
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string | number>} [attributes]
 * @param {string} [text]
 * @returns {SVGElementTagNameMap[K]}
 */
export function svgElement(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * Milliseconds as seconds, with no more decimals than it needs.
 * @param {number} ms
 */
export function seconds(ms) {
  return `${Number((ms / 1000).toFixed(3))} s`;
}
