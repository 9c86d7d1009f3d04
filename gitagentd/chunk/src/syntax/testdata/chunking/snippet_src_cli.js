import x from "x";

export function parseArgs(argv) {
  return argv;
}

const handler = async (req) => {
  return req;
};

const LIMIT = 3;

export default class Parser extends Base {
  constructor() {
    super();
  }

  parse(text) {
    return text;
  }
}
