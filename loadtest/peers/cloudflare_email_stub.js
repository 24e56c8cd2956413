// workerd run alone has no cloudflare:email (wrangler supplies it); the
// Agents SDK imports EmailMessage for its email routing, which this
// benchmark does not use. Constructing one says so.
export class EmailMessage {
  constructor() { throw new Error('cloudflare:email is not available in this benchmark'); }
}
