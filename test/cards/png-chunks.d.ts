// The PNG chunk libraries tests build cards with ship no types.
declare module "png-chunks-extract" {
  export default function extract(data: Uint8Array): { name: string; data: Uint8Array }[];
}
declare module "png-chunks-encode" {
  export default function encode(chunks: { name: string; data: Uint8Array }[]): Uint8Array;
}
declare module "png-chunk-text" {
  export function encode(keyword: string, content: string): { name: string; data: Uint8Array };
  export function decode(data: Uint8Array): { keyword: string; text: string };
}
