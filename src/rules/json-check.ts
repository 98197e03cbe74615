// A strict JSON syntax check that says where the first error is. JSON.parse's messages differ
// between V8 versions and often give no position at all, so the position is found here.

/** The first syntax error of `text` as JSON (offset into the text and a message), or undefined. */
export function jsonSyntaxError(text: string): { offset: number; message: string } | undefined {
  let i = 0;
  const fail = (message: string): never => {
    throw new JsonError(i, message);
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const describe = () => (i >= text.length ? 'end of input' : `'${text[i]}'`);

  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{') return object();
    if (c === '[') return array();
    if (c === '"') return string();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return number();
    for (const word of ['true', 'false', 'null']) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return;
      }
    }
    fail(`expected a value, found ${describe()}`);
  };

  const object = () => {
    i++;
    ws();
    if (text[i] === '}') return void i++;
    for (;;) {
      ws();
      if (text[i] !== '"') fail(`expected a double-quoted property name, found ${describe()}`);
      string();
      ws();
      if (text[i] !== ':') fail(`expected ':' after the property name, found ${describe()}`);
      i++;
      value();
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === '}') return void i++;
      fail(`expected ',' or '}', found ${describe()}`);
    }
  };

  const array = () => {
    i++;
    ws();
    if (text[i] === ']') return void i++;
    for (;;) {
      value();
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === ']') return void i++;
      fail(`expected ',' or ']', found ${describe()}`);
    }
  };

  const string = () => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') {
      const c = text.charCodeAt(i);
      if (c < 0x20) fail('control character in a string (write it escaped)');
      if (text[i] === '\\') {
        const e = text[i + 1];
        if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
        else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else fail('invalid escape in a string');
      } else i++;
    }
    if (i >= text.length) {
      i = start;
      fail('unterminated string');
    }
    i++;
  };

  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m) fail(`invalid number`);
    i += m![0].length;
  };

  try {
    value();
    ws();
    if (i < text.length) fail(`unexpected ${describe()} after the end of the document`);
    return undefined;
  } catch (e) {
    if (e instanceof JsonError) return { offset: e.offset, message: e.message };
    throw e;
  }
}

class JsonError extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}
