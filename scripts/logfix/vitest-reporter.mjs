// vitest 1.x/2.x custom reporter, the ground truth of the vitest fixtures (written in the same
// run as the verbose log): one JSON line per test with its name as the verbose reporter spells
// it (the file's relative path, a project name, the suites and the title joined by ' > '), its
// mode, its final state, and whether a result for it reached the reporters while the run went
// on (`onTaskUpdate`), which is what the verbose reporter prints a flat line for off a terminal.
import { writeFileSync } from 'node:fs'

export default class RecordingReporter {
  reported = new Set()

  onTaskUpdate(packs) {
    for (const [id, result] of packs) {
      if (result?.state && result.state !== 'run')
        this.reported.add(id)
    }
  }

  onFinished(files = []) {
    const lines = []
    const walk = (task, names) => {
      const here = [...names, task.name]
      if (task.type === 'suite') {
        for (const child of task.tasks ?? [])
          walk(child, here)
        return
      }
      lines.push(JSON.stringify({
        name: here.join(' > '),
        mode: task.mode,
        state: task.result?.state ?? null,
        reported: this.reported.has(task.id),
      }))
    }
    for (const file of files) {
      const top = file.projectName ? [`|${file.projectName}|`] : []
      for (const child of file.tasks ?? [])
        walk(child, top.length ? [`${top[0]} ${file.name}`] : [file.name])
    }
    writeFileSync(process.env.BENCH_VITEST_RESULTS, `${lines.join('\n')}\n`)
  }
}
