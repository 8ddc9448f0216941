import { renderAsync } from "@resvg/resvg-js";

/**
 * An SVG document to PNG at `width` px wide, on the libuv thread pool (resvg, native), so that
 * drawing never blocks the event loop. No system fonts: nothing drawn here has text.
 */
export async function rasterize(svg: string, width: number): Promise<Uint8Array> {
  const image = await renderAsync(svg, { fitTo: { mode: "width", value: width }, font: { loadSystemFonts: false } });
  return image.asPng();
}

/** Another image scaled and centre-cropped to fill exactly `width` x `height` (an upstream's size to the contract's). */
export function fitSvg(png: Uint8Array, width: number, height: number): string {
  const href = `data:image/png;base64,${Buffer.from(png).toString("base64")}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"><image width="${width}" height="${height}" preserveAspectRatio="xMidYMid slice" xlink:href="${href}"/></svg>`;
}
