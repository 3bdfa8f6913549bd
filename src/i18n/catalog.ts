/**
 * A language's messages, gettext style: the English text exactly as written in the templates and
 * routes (with its `{name}` placeholders) → the same message in that language, with the same
 * placeholders. English needs no catalog: the key is the text.
 */
export type Catalog = Readonly<Record<string, string>>;
