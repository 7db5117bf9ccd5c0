/** The app's entry point (package.json `main`): importing each module registers its functions. */
import "./coordinator";
import "./worker";
import "./wake";
import "./jobsApi";
import "./leaderApi";
import "./statusApi";
import "./hooks";
