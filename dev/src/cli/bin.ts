#!/usr/bin/env node
import { runDevAsProcess } from "./main.js";

// The development package's `bin`, `azure-leader-coordinator-dev`: a separate entry file, so the package's entries
// import nothing with side effects. `azure-leader-coordinator-dev --help` lists the commands.
runDevAsProcess(process.argv.slice(2));
