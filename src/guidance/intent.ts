// Intent → tier: a small, replaceable rule that says how many tools a message needs.

/** Complexity levels, from the smallest tool set to the largest. */
export type TierLevel = 'simple' | 'medium' | 'complex';
/**
 * The tier levels, lowest first: escalation goes this way.
 *
 * @example
 * ```ts
 * for (const level of TIER_LEVELS) console.log(level, registry.estimateTokens(level));
 * ```
 */
export const TIER_LEVELS: readonly TierLevel[] = ['simple', 'medium', 'complex'];

// Whole-message greetings, thanks and small talk: nothing to call.
const GREETING = new RegExp(
  String.raw`^(?:(?:hi|hello|hey|hiya|yo|howdy|greetings|good (?:morning|afternoon|evening|night)|` +
    String.raw`thanks?(?: you)?(?: so much| a lot)?|thx|ty|cheers|bye|goodbye|see you|ok(?:ay)?|cool|great|nice|` +
    String.raw`how are you(?: doing)?|what'?s up|sup)\b[\s,!.?]*)+(?:there|everyone|all|again|friend|bot)?[\s!.?]*$`,
);
// Verbs that ask a tool to do or fetch something.
const ACTION = new RegExp(
  String.raw`\b(?:add|create|make|new|update|rename|change|edit|set|move|complete|finish|mark|check off|tick off|` +
    String.raw`delete|remove|drop|cancel|archive|find|search|look ?up|show|list|get|fetch|open|read|send|email|book|` +
    String.raw`schedule|assign|sort|filter|count|summari[sz]e|export|import|copy|merge|compare)\b`,
  'g',
);
// Words that announce a plan or a sequence of actions, or work over many items.
const PLAN = new RegExp(
  String.raw`\b(?:plan|organi[sz]e|reorgani[sz]e|clean ?up|prioriti[sz]e|step by step|workflow|then|after that|` +
    String.raw`afterwards|and also|as well as|followed by|first\b.*\b(?:next|second|finally)|every|each|` +
    String.raw`all (?:of )?(?:my|the)|in bulk|batch)\b|;`,
);
// A question about the user's own data is a named lookup.
const OWN_DATA = /\b(?:my|mine|our)\b/;
const QUESTION =
  /\?\s*$|^(?:what|who|when|where|which|why|how|is|are|was|were|do|does|did|can|could|will|would|should)\b/;

/**
 * The tier a message needs, by a small documented rule (replace it with your own:
 * `createToolRegistry(tools, { classify })`):
 * - no message (`undefined`, not a string, blank) → `complex`: nothing is known, offer everything;
 * - a greeting, thanks or small talk → `simple`;
 * - a plan or several actions (two action verbs, or one with "then", "every", "all my", "plan",
 *   "organise", ";" …) → `complex`;
 * - one action, or a question about the user's own data ("my", "our") → `medium` (a named lookup);
 * - any other short question (a one-fact question, at most 15 words) → `simple`;
 * - anything else → `complex`.
 *
 * @example
 * ```ts
 * classifyComplexity('hi there!');                                // 'simple'
 * classifyComplexity('show me the dentist task');                 // 'medium'
 * classifyComplexity('find the milk task, then delete it');       // 'complex'
 * classifyComplexity(undefined);                                  // 'complex'
 * ```
 */
export function classifyComplexity(message: string | undefined): TierLevel {
  if (typeof message !== 'string') return 'complex';
  // Long texts are plans or pasted documents; reading their head is enough to decide.
  const text = message.slice(0, 2000).toLowerCase().replace(/[’‘]/g, "'").replace(/\s+/g, ' ').trim();
  if (text === '') return 'complex';
  if (GREETING.test(text)) return 'simple';
  const actions = new Set(text.match(ACTION) ?? []).size;
  if (actions >= 2 || (PLAN.test(text) && (actions >= 1 || !QUESTION.test(text)))) return 'complex';
  if (actions === 1 || (OWN_DATA.test(text) && QUESTION.test(text))) return 'medium';
  if (QUESTION.test(text) && text.split(' ').length <= 15) return 'simple';
  return 'complex';
}
