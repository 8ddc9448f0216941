/** A fixed answer of the baseline servers: what Persona answered for that request, byte for byte. */
export interface Route {
  method: string;
  path: string;
  status: number;
  body: string;
  contentType: string;
}
