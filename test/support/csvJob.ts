/** A small job of the built-in group-by kind: three CSV items, the third with an amount that is not a number. */
export const GROUP_BY_CSV_JOB = {
  kind: "group-by",
  params: { format: "csv", keyField: "region", valueField: "amount" },
  items: [
    { inline: "region,amount\neu,1" },
    { inline: "region,amount\nus,2" },
    { inline: "region,amount\neu,not-a-number" },
  ],
};
