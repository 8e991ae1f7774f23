// node:test custom reporter: one JSON line per finished test or suite (the ground truth
// for the `tap` fixtures, written in the same run as the TAP output).
export default async function* reporter(source) {
  for await (const event of source) {
    if (event.type === 'test:pass' || event.type === 'test:fail') {
      const d = event.data;
      yield JSON.stringify({
        type: event.type,
        name: d.name,
        nesting: d.nesting,
        file: d.file,
        skip: d.skip !== undefined && d.skip !== false,
        todo: d.todo !== undefined && d.todo !== false,
      }) + '\n';
    }
  }
}
