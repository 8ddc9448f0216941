// `node bench/relevance-floors.ts`: where the relevance floors of knowledge retrieval come from
// (issue 34 item 5). Over a small corpus of distinct subjects, chunked as the service chunks, it
// measures for related questions, unrelated questions and small talk (a) the cosine similarity of
// the configured embeddings provider (the offline hashed lexical embedder by default; an
// OpenAI-compatible one with EMBEDDINGS_PROVIDER=openai and its settings) and (b) the full-text rank
// (`ts_rank_cd` of the service's OR-ed query) on the database, then prints the ranges the floors
// must separate and the floors in force. Runs on BENCH_DATABASE_URL, else the embedded database in
// memory. docs/adr/0287-an-absolute-relevance-floor-on-both-sides-of-retrieval.md records the figures.
import { loadConfig } from "../server/toolkit/config.ts";
import { openDatabase } from "../server/toolkit/db/database.ts";
import { chunkText } from "../server/areas/knowledge/chunk.ts";
import { relevanceFloors } from "../server/areas/knowledge/relevance.ts";
import { createLogger } from "../server/toolkit/logger.ts";
import { createEmbeddings } from "../server/toolkit/providers/embeddings/index.ts";

const CORPUS: Record<string, string> = {
  "astronomy.md": [
    "# Planets of the inner solar system",
    "Venus orbits inside Earth's orbit, so from here it never appears more than about 47 degrees from the Sun: an evening star after sunset or a morning star before dawn. Its thick carbon dioxide atmosphere traps heat, making the surface hotter than Mercury.",
    "Mars has two small moons, Phobos and Deimos. Its red colour comes from iron oxide dust. Olympus Mons, a shield volcano on Mars, is the tallest mountain of any planet.",
    "Mercury, the smallest planet, has almost no atmosphere, so its days are scorching and its nights freezing. A year on Mercury lasts 88 Earth days.",
  ].join("\n\n"),
  "baking.txt": [
    "Sourdough bread rises with a starter of wild yeast and lactic acid bacteria instead of commercial yeast. Feed the starter flour and water daily until it doubles within hours.",
    "For a crisp crust, bake the loaf in a preheated Dutch oven at 250 degrees Celsius with the lid on for twenty minutes, then remove the lid so the crust browns.",
    "Shape the dough gently after the bulk fermentation, let it proof in a floured basket overnight in the fridge, and score the top with a blade just before it goes into the oven.",
  ].join("\n\n"),
  "warranty.md": [
    "# Warranty and returns",
    "Every kettle comes with a two-year warranty covering defects in materials and workmanship. The warranty does not cover limescale damage, a dropped kettle or repairs by anyone other than our service centre.",
    "To return a kettle within 30 days of purchase, pack it in its original box with the receipt and book a free collection on the returns page. Refunds reach the original payment method within five working days.",
    "If the kettle switches off before the water boils, descale it with a solution of citric acid and water, then rinse it twice. If it still switches off early, contact support with the serial number from the base.",
  ].join("\n\n"),
  "sailing.md": [
    "## Points of sail",
    "A sailboat cannot sail directly into the wind. Close-hauled, the sails are trimmed in tight and the boat heads about 45 degrees off the wind; tacking zigzags the boat upwind.",
    "When running downwind the mainsail is eased far out, and an accidental gybe can swing the boom violently across the cockpit.",
  ].join("\n\n"),
  "lore.md": [
    "# The city of Vael",
    "Vael is a harbour city built on three islands joined by stone bridges. The Tidewardens, an order of sworn guards, keep the bridges and collect the bridge toll at dawn and dusk.",
    "The old lighthouse on the northern island has not been lit for a hundred years. Sailors say a drowned keeper still climbs its stairs on stormy nights, and no Tidewarden will enter it after dark.",
  ].join("\n\n"),
};

const RELATED: [string, string][] = [
  ["Why is Venus always seen close to the Sun, as a morning or evening star?", "astronomy.md"],
  ["Tell me about Phobos", "astronomy.md"],
  ["How long is a year on Mercury?", "astronomy.md"],
  ["How do I keep my sourdough starter alive?", "baking.txt"],
  ["How do I get a crisp crust on my bread?", "baking.txt"],
  ["Does the warranty cover limescale?", "warranty.md"],
  ["How do I return my kettle and get a refund?", "warranty.md"],
  ["my kettle turns off before it boils", "warranty.md"],
  ["How does a sailboat tack upwind against the wind?", "sailing.md"],
  ["Who guards the bridges of Vael?", "lore.md"],
  ["Is the lighthouse haunted?", "lore.md"],
];

const UNRELATED = [
  "What is the capital of France?",
  "Can you recommend a good science fiction novel?",
  "How do I change a flat tyre on a bicycle?",
  "What's the best way to learn the guitar?",
  "Explain how a neural network is trained",
  "Write me a poem about autumn leaves",
];

const SMALL_TALK = [
  "Hello there",
  "Hi!",
  "How are you today?",
  "Good morning",
  "Thanks, that was great",
  "What's your name?",
  "Tell me a joke",
  "lol ok",
  "I'm bored",
  "Nice to meet you",
];

const cosine = (a: number[], b: number[]) => a.reduce((sum, value, i) => sum + value * b[i]!, 0) / (Math.hypot(...a) * Math.hypot(...b) || 1);

async function main(): Promise<void> {
  const env = { ...process.env, EMBEDDED_DB_IN_MEMORY: "true", ...(process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL } : {}) };
  const config = loadConfig(env);
  const log = createLogger({ ...config, logLevel: "warn" });
  const db = await openDatabase(config, log);
  const embeddings = await createEmbeddings(config);
  const floors = relevanceFloors(config);
  try {
    const chunks = Object.entries(CORPUS).flatMap(([filename, text]) => chunkText(text).map((chunk) => ({ filename, content: chunk.content })));
    const { vectors } = await embeddings.embed(chunks.map((chunk) => chunk.content));
    const rank = async (query: string, content: string) => {
      const result = await db.knex.raw<{ rows: { rank: number | null }[] }>(
        `SELECT CASE WHEN to_tsvector('english', ?) @@ q THEN ts_rank_cd(to_tsvector('english', ?), q) END AS rank
           FROM (SELECT regexp_replace(websearch_to_tsquery('english', ?)::text, ' & (\\?!!)', ' | ', 'g')::tsquery AS q) query`,
        [content, content, query],
      );
      return result.rows[0]?.rank === null || result.rows[0]?.rank === undefined ? null : Number(result.rows[0].rank);
    };
    const measure = async (query: string) => {
      const [vector] = (await embeddings.embed([query])).vectors;
      return Promise.all(chunks.map(async (chunk, i) => ({ filename: chunk.filename, similarity: cosine(vector!, vectors[i]!), rank: await rank(query, chunk.content) })));
    };
    const fmt = (value: number | null | undefined) => (value === null || value === undefined ? "  -   " : value.toFixed(4));
    console.log(`provider ${embeddings.name} (${embeddings.model}), database ${db.kind}, ${chunks.length} chunks; floors in force: similarity ${floors.similarity}, text rank ${floors.textRank}\n`);
    console.log("related question -> its document: best similarity of its chunks, best text rank; best similarity of the other documents");
    const relatedBest: number[] = [];
    const relatedRank: number[] = [];
    for (const [question, filename] of RELATED) {
      const scores = await measure(question);
      const own = scores.filter((s) => s.filename === filename);
      const sim = Math.max(...own.map((s) => s.similarity));
      const ranks = own.map((s) => s.rank).filter((r): r is number => r !== null);
      relatedBest.push(sim);
      if (ranks.length) relatedRank.push(Math.max(...ranks));
      const others = Math.max(...scores.filter((s) => s.filename !== filename).map((s) => s.similarity));
      console.log(`  ${fmt(sim)}  ${fmt(ranks.length ? Math.max(...ranks) : null)}  others ${fmt(others)}  ${question}`);
    }
    const noise: number[] = [];
    const noiseRank: number[] = [];
    for (const [title, queries] of [["unrelated question", UNRELATED], ["small talk", SMALL_TALK]] as const) {
      console.log(`\n${title}: best similarity and best text rank over every chunk`);
      for (const query of queries) {
        const scores = await measure(query);
        const sim = Math.max(...scores.map((s) => s.similarity));
        const ranks = scores.map((s) => s.rank).filter((r): r is number => r !== null);
        noise.push(sim);
        if (ranks.length) noiseRank.push(Math.max(...ranks));
        console.log(`  ${fmt(sim)}  ${fmt(ranks.length ? Math.max(...ranks) : null)}  ${query}`);
      }
    }
    console.log(`\nsimilarity: unrelated and small talk at most ${fmt(Math.max(...noise))}; related at least ${fmt(Math.min(...relatedBest))}`);
    console.log(`text rank: unrelated and small talk at most ${fmt(noiseRank.length ? Math.max(...noiseRank) : null)} (${noiseRank.length} matched); related at least ${fmt(relatedRank.length ? Math.min(...relatedRank) : null)} (${relatedRank.length} of ${RELATED.length} matched)`);
  } finally {
    await db.close();
  }
}

await main();
