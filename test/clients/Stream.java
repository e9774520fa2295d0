// test/clients/Stream.java: streams a query through pgJDBC with autocommit
// off and a fetch size of 500, the way pgJDBC reads a large result in
// batches (a portal, executed 500 rows at a time).  Prints every row as one
// line, columns tab-separated, NULL as \N, and nothing else, so that
// test/t/060_clients.pl can compare the lines with a single server's.
//
//   java -cp CLASSES:/usr/share/java/postgresql.jar Stream HOST PORT DB USER QUERY [WRITE]
//
// WRITE (SQL) runs first in the same transaction, before the query.  The
// transaction is rolled back at the end, so a write leaves the tables as
// they were and every run sees the same data.

import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Properties;

public class Stream
{
	public static void main(String[] args) throws Exception
	{
		if (args.length != 5 && args.length != 6)
		{
			System.err.println("usage: Stream HOST PORT DB USER QUERY [WRITE]");
			System.exit(2);
		}
		String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/" + args[2];
		Properties props = new Properties();
		props.setProperty("user", args[3]);
		props.setProperty("sslmode", "disable");

		PrintWriter out = new PrintWriter(new BufferedWriter(
			new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16));
		try (Connection conn = DriverManager.getConnection(url, props))
		{
			// pgJDBC fetches in batches only outside autocommit
			conn.setAutoCommit(false);
			if (args.length == 6)
			{
				try (Statement w = conn.createStatement())
				{
					w.execute(args[5]);
				}
			}
			try (Statement st = conn.createStatement())
			{
				st.setFetchSize(500);
				try (ResultSet rs = st.executeQuery(args[4]))
				{
					int ncols = rs.getMetaData().getColumnCount();
					StringBuilder line = new StringBuilder();
					while (rs.next())
					{
						line.setLength(0);
						for (int i = 1; i <= ncols; i++)
						{
							String v = rs.getString(i);
							if (i > 1)
								line.append('\t');
							line.append(v == null ? "\\N" : v);
						}
						out.println(line);
					}
				}
			}
			conn.rollback();
		}
		finally
		{
			out.flush();
		}
	}
}
