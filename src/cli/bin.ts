#!/usr/bin/env node
import { runAsProcess } from "./main.js";

// The package's `bin`, `azure-leader-coordinator`: a separate entry file, so the library entries import nothing with
// side effects. `azure-leader-coordinator --help` lists the commands.
runAsProcess(process.argv.slice(2));
